"""`pytest benches/bench_augment.py` as a user runs it: rows in parquet, agreement in every row."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import run_pytest

BENCH = Path(__file__).resolve().parents[2] / "benches" / "bench_augment.py"


@pytest.fixture(scope="module")
def frame(tmp_path_factory: pytest.TempPathFactory, tiny_dataset: Path) -> pd.DataFrame:
    out = tmp_path_factory.mktemp("augment-run")
    common = [str(BENCH), f"--dataset={tiny_dataset}", f"--imgbench-results={out / 'results'}"]
    quick = run_pytest([*common, "--imgbench-profile=quick", "--imgbench-rounds=2"], cwd=out)
    assert quick.returncode == 0, quick.stdout[-3000:] + quick.stderr[-3000:]
    batch = run_pytest(
        [*common, "--imgbench-profile=default", "--imgbench-rounds=2", "-k",
         "kornia and train-classification and 32 and t1"],
        cwd=out,
    )  # fmt: skip
    assert batch.returncode == 0, batch.stdout[-3000:] + batch.stderr[-3000:]
    return pd.concat([pd.read_parquet(p) for p in (out / "results").glob("*.parquet")])


def test_quick_rows(frame: pd.DataFrame) -> None:
    quick = frame[~frame.params_json.str.contains("input_size")]
    assert (quick.status == "ok").all(), quick[quick.status != "ok"][["test_id", "reason"]]
    assert set(quick.library) == {"albumentations", "torchvision", "pillow"}
    assert (quick.stage == "augment").all() and (quick.threads == 1).all()
    params = quick.params_json.map(json.loads)
    assert {p.get("transform") for p in params} >= {"hflip", "resize", "normalize"}
    assert {p.get("pipeline") for p in params} >= {"train-classification"}
    assert (quick.images_per_s_median > 0).all() and (quick.megapixels_per_s_median > 0).all()


def test_every_row_carries_its_agreement(frame: pd.DataFrame) -> None:
    extras = frame.extra_json.map(json.loads)
    flags = extras.map(lambda e: e["agreement"])
    assert flags.str.startswith("pass").all(), flags[~flags.str.startswith("pass")]
    hflip = frame.params_json.str.contains('"hflip"')
    assert set(flags[hflip]) <= {"pass", "pass (reference)"}


def test_batch_row_is_per_image(frame: pd.DataFrame) -> None:
    (row,) = frame[frame.batch_size == 32].itertuples()
    assert row.library == "kornia" and row.status == "ok"
    assert row.images_per_round % 32 == 0
    assert json.loads(row.params_json)["input_size"] == "320x320"
