"""AlbumentationsX (AGPL-3.0) in its own env beside MIT albumentations 2.0.8, run for real.

`make test` builds the env (`imgbench env create albumentationsx`); where it is missing these
tests skip naming that command. One session in the env (its augment and loader cases on ten
photos) is shared by the module.
"""

from __future__ import annotations

import json
from importlib import metadata
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from imgbench.envs import (
    ENVIRONMENTS,
    main_site_packages,
    shadowed_distributions,
    site_packages_of,
)
from tests.envs.env_sessions import env_python, run_session

ENTRIES = ("albumentations/numpy", "albumentationsx/numpy")


@pytest.fixture(scope="module")
def session(
    tmp_path_factory: pytest.TempPathFactory, tiny_dataset: Path
) -> tuple[pd.DataFrame, Path]:
    """The env's session, with tests/envs/env_probe.py after its cases: the env's verified
    facts and the registry's verdict on both entries there (each was an interpreter of its own,
    importing torch and OpenCV again)."""
    out = tmp_path_factory.mktemp("albumentationsx-session")
    rows = run_session(
        "albumentationsx", out, tiny_dataset, "albumentationsx", {"augment": ENTRIES}
    )
    return rows, out / "probe" / "probe.json"


@pytest.fixture(scope="module")
def ax_rows(session: tuple[pd.DataFrame, Path]) -> pd.DataFrame:
    return session[0]


@pytest.fixture(scope="module")
def probe(session: tuple[pd.DataFrame, Path]) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(session[1].read_text())
    assert "error" not in found, found["error"]
    assert found["environment"] == "albumentationsx"
    assert found["problem"] is None, found["problem"]  # what verify_env raises on
    return found


def test_the_env_is_albumentationsx_layered_over_the_main_env(probe: dict[str, Any]) -> None:
    python = env_python("albumentationsx")
    found = probe["facts"]
    assert found["albumentationsx"].startswith("2.5.")
    assert found["albumentations"] == found["albumentationsx"]  # the module is AlbumentationsX
    assert found["licence"].startswith("AGPL-3.0") and found["module-own-site"] == "True"
    # only albucore is a second copy (AlbumentationsX pins its own); numpy, OpenCV and torch
    # are the main env's
    own, main = site_packages_of(python), main_site_packages()
    allowed = ENVIRONMENTS["albumentationsx"].may_shadow
    assert shadowed_distributions(own, main, allowed) == []
    assert [s.split()[0] for s in shadowed_distributions(own, main)] == ["albucore"]
    assert not any((own / name).exists() for name in ("numpy", "cv2", "torch"))
    # the main env keeps MIT albumentations 2.0.8, whose entry does not run in the env
    assert metadata.version("albumentations").startswith("2.0.")
    replaced, own_entry = (probe["unmet"][name] for name in ENTRIES)  # in the env
    assert "albumentationsx environment replaces" in replaced and own_entry is None


def test_albumentationsx_problems_are_named() -> None:
    problem = ENVIRONMENTS["albumentationsx"].problem
    good = {"albumentations": "2.5.1", "albumentationsx": "2.5.1", "module-own-site": "True"}
    assert problem(good) is None
    assert "not installed" in (problem({**good, "albumentationsx": ""}) or "")
    mit = problem({**good, "albumentations": "2.0.8"}) or ""
    assert "2.0.8, not AlbumentationsX 2.5.1" in mit
    assert "own site-packages" in (problem({**good, "module-own-site": "False"}) or "")


def test_imgbench_env_names_both_licences() -> None:
    """`imgbench env`'s rows for both (the whole listing imports every library: 11 s here)."""
    from imgbench.libraries import _isolated_status, _main_licence

    assert _main_licence("albumentations") == "MIT"
    env_python("albumentationsx")
    status = _isolated_status("augment", "albumentationsx", "albumentationsx", "albumentationsx")
    assert status.available and (status.licence or "").startswith("AGPL-3.0")
    assert (status.version or "").startswith("2.5.")


def test_rows_say_albumentationsx_and_its_version(
    ax_rows: pd.DataFrame, probe: dict[str, Any]
) -> None:
    assert (ax_rows.status == "ok").all(), ax_rows.reason.tolist()
    assert (ax_rows.environment == "albumentationsx").all()
    augment = ax_rows[ax_rows.stage == "augment"]
    assert set(augment.library) == {"albumentationsx"}
    assert set(augment.library_version) == {probe["facts"]["albumentationsx"]}
    assert {
        json.loads(p).get("transform") or json.loads(p).get("pipeline") for p in augment.params_json
    } == {
        "hflip",
        "train-classification",
    }


def test_an_agreement_case_passes_in_the_env(ax_rows: pd.DataFrame) -> None:
    """hflip is compared with torchvision's output there, as albumentations' is in the main env."""
    row = ax_rows[ax_rows.params_json.str.contains('"hflip"')].iloc[0]
    extra = json.loads(row.extra_json)
    assert extra["agreement"] == "pass" and extra["agreement_reference"] == "torchvision/v2-tensor"
    assert extra["output_check"].startswith("pass"), extra


def test_the_default_loader_pipeline_runs_with_albumentationsx(
    ax_rows: pd.DataFrame, probe: dict[str, Any]
) -> None:
    loader = ax_rows[ax_rows.stage == "loader"]
    assert set(loader.workers) == {0, 2}  # the default profile's extra-pipeline counts
    for _, row in loader.iterrows():
        extra = json.loads(row.extra_json)
        assert row.variant == "files-opencv-albumentationsx"
        assert extra["first_batch_check"] == "pass"
        assert extra["pipeline_versions"]["albumentationsx"] == probe["facts"]["albumentationsx"]
