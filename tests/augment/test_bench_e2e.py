"""`pytest benches/` as a user runs it: augment rows in parquet, agreement in every row."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import run_pytest
from tests.shared_runs import SessionRun

BENCH = Path(__file__).resolve().parents[2] / "benches" / "bench_augment.py"


@pytest.fixture(scope="module")
def batch_row(tmp_path_factory: pytest.TempPathFactory, tiny_dataset: Path) -> pd.DataFrame:
    """One batched case of the default profile, in a session of its own: measured in the
    session's process (the quick run's augment rows go through the worker server), which took
    this session from about 18 s to 9 s here."""
    out = tmp_path_factory.mktemp("augment-run")
    batch = run_pytest(
        [str(BENCH), f"--dataset={tiny_dataset}", f"--imgbench-results={out / 'results'}",
         "--imgbench-profile=default", "--imgbench-rounds=2", "--imgbench-process=in-process",
         "-k", "kornia and train-classification and 32 and t1"],
        cwd=out,
    )  # fmt: skip
    assert batch.returncode == 0, batch.stdout[-3000:] + batch.stderr[-3000:]
    (parquet,) = (out / "results").glob("*.parquet")
    return pd.read_parquet(parquet)


@pytest.fixture(scope="module")
def quick(quick_session: SessionRun) -> pd.DataFrame:
    """The augment rows of the test session's one quick run (tests/shared_runs.py)."""
    assert quick_session.returncode == 0, quick_session.output
    return quick_session.frame("augment")


@pytest.fixture(scope="module")
def frame(quick: pd.DataFrame, batch_row: pd.DataFrame) -> pd.DataFrame:
    return pd.concat([quick, batch_row])


def test_quick_rows(quick: pd.DataFrame) -> None:
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


def test_batch_row_is_per_image(batch_row: pd.DataFrame) -> None:
    (row,) = batch_row[batch_row.batch_size == 32].itertuples()
    assert row.library == "kornia" and row.status == "ok"
    assert row.images_per_round % 32 == 0
    assert json.loads(row.params_json)["input_size"] == "320x320"
