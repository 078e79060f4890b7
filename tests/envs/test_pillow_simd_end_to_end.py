"""pillow-simd end to end: Pillow's augmentations and the Pillow loader pipelines in its env.

The env is built by `make bench` (`imgbench env create pillow-simd`, it compiles); where it is
missing these tests skip naming that command. One session in the env (its augment and loader
cases on ten photos) is shared by the module.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from tests.envs.env_sessions import run_session


@pytest.fixture(scope="module")
def simd_rows(tmp_path_factory: pytest.TempPathFactory, tiny_dataset: Path) -> pd.DataFrame:
    out = tmp_path_factory.mktemp("pillow-simd-session")
    # the augment entry (pillow-simd-pil-...) and the two loader pipelines (files-pillow-simd-*)
    return run_session("pillow-simd", out, tiny_dataset, "pillow-simd-pil or pillow-simd-torch")


def test_rows_are_pillow_simd_and_ok(simd_rows: pd.DataFrame) -> None:
    assert (simd_rows.status == "ok").all(), simd_rows.reason.tolist()
    assert (simd_rows.environment == "pillow-simd").all()
    assert set(simd_rows.stage) == {"augment", "loader"}


def test_pillow_augmentations_run_on_pillow_simd(simd_rows: pd.DataFrame) -> None:
    augment = simd_rows[simd_rows.stage == "augment"]
    assert set(augment.library) == {"pillow-simd"}
    assert augment.library_version.str.contains(".post").all()  # pillow-simd's versions
    names = {
        json.loads(p).get("transform") or json.loads(p).get("pipeline") for p in augment.params_json
    }
    assert names == {"hflip", "train-classification"}
    hflip = json.loads(augment[augment.params_json.str.contains('"hflip"')].iloc[0].extra_json)
    assert hflip["agreement"] == "pass" and hflip["output_check"].startswith("pass")


def test_pillow_loader_pipelines_run_on_pillow_simd(simd_rows: pd.DataFrame) -> None:
    loader = simd_rows[simd_rows.stage == "loader"]
    assert set(loader.variant) == {"files-pillow-simd-torchvision", "files-pillow-simd-pillow-simd"}
    assert set(loader.workers) == {0, 2}  # the default profile's extra-pipeline counts
    for _, row in loader.iterrows():
        extra = json.loads(row.extra_json)
        assert extra["first_batch_check"] == "pass"
        versions = extra["pipeline_versions"]
        assert ".post" in versions["pillow-simd"] and "pillow" not in versions, versions
