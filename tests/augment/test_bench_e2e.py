"""Augment rows: `pytest benches/` as a user runs it (the shared quick run's rows in parquet), a
batched case measured by the engine, and the agreement in every row."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from imgbench.controls import resolve
from imgbench.measure.manager import Manager
from imgbench.measure.rounds import Measurement
from imgbench.measure.rows import RunHeader, case_listing, case_row
from imgbench.profiles import ProfileChoice
from imgbench.results.store import rows_table
from imgbench.stages import planner, session_cases
from tests.shared_runs import SessionRun


@pytest.fixture(scope="module")
def batch_row(tiny_dataset: Path) -> pd.DataFrame:
    """The default profile's kornia train-classification cases at a 320x320 input (the batch of
    32 and its per-image twin: what ``-k "kornia and train-classification and 32 and t1"``
    selected in the session this fixture ran before), measured by the engine's Manager in this
    process and turned into rows as the plugin does: no pytest session of its own (the quick
    run's augment rows are `pytest benches/` as a user runs it, through the worker server)."""
    choice = ProfileChoice("default")
    settings = resolve(choice.resolve(), {"rounds": 2, "process_model": "in-process"})
    keywords = ("kornia", "train-classification", "32", "t1")
    cases = [
        c
        for c in session_cases("augment", choice, settings)
        if all(k in c.test_id for k in keywords)
    ]
    assert any(c.params.get("batch_size") == 32 for c in cases), [c.test_id for c in cases]
    manager = Manager(settings, planner(choice), str(tiny_dataset))
    try:
        outcomes = [(case, manager.measure(case)) for case in cases]
        dataset = manager.context().dataset
    finally:
        manager.close()
    rows = []
    for case, outcome in outcomes:
        assert isinstance(outcome, Measurement), (case.test_id, outcome)
        listing = case_listing(case.test_id, case)
        rows.append(
            case_row(RunHeader("run", None, "run"), listing, case, outcome, "ok", None, 0.0,
                     dataset, columns=outcome.columns, settings=settings)
        )  # fmt: skip
    rows_table(rows)  # every value fits its column's type, as in a saved row
    return pd.DataFrame(rows)


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
