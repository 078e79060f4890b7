"""A dataset that raises on one index and one that hangs, under several loaders, in a real bench
subprocess: each is a failed row with the error, the suite goes on, and no worker survives."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import run_pytest

BENCHES = Path(__file__).resolve().parents[2] / "benches"


@pytest.fixture(scope="module")
def fault_run(tmp_path_factory: pytest.TempPathFactory, photo_dir: Path) -> dict:
    out = tmp_path_factory.mktemp("loader-faults")
    log = out / "children.jsonl"
    os.environ["IMGBENCH_CHILDREN_LOG"] = str(log)
    try:
        proc = run_pytest(
            [
                "-p",
                "tests.loaders.faults",
                str(BENCHES / "bench_loaders.py"),
                f"--dataset={photo_dir}",
                "--imgbench-profile=quick",
                "--imgbench-rounds=2",
                # the plugin swaps the loader cases and watches the pytest process's children:
                # worker processes would not load it (their own crash/hang handling is
                # tests/measure/test_worker.py's)
                "--imgbench-process=in-process",
                f"--imgbench-results={out / 'results'}",
            ],
            cwd=Path(__file__).resolve().parents[2],
            timeout=240,
        )
    finally:
        del os.environ["IMGBENCH_CHILDREN_LOG"]
    (parquet,) = (out / "results").glob("*.parquet")
    records = [json.loads(line) for line in log.read_text().splitlines()]
    return {"frame": pd.read_parquet(parquet), "proc": proc, "children": records}


def test_every_fault_is_a_failed_row_with_its_error(fault_run: dict) -> None:
    frame = fault_run["frame"]
    assert len(frame) == 9, fault_run["proc"].stdout[-3000:]
    failed = frame[frame.status == "failed"]
    assert len(failed) == 8
    broken = failed[failed.reason.str.contains("broken sample 3")]
    hung = failed[failed.reason.str.contains("no batch within|no sample within|timed out")]
    assert len(broken) == 3, failed.reason.tolist()
    assert len(hung) == 4, failed.reason.tolist()
    assert (broken.reason.str.contains("^LoaderError: ")).all()
    assert (hung.reason.str.contains("^LoaderError: ")).all()
    assert failed.reason.str.contains(r"torch-dataloader \(|threadpool \(|queue-feeder \(").all()


def test_wrong_labels_fail_the_first_batch_check(fault_run: dict) -> None:
    frame = fault_run["frame"]
    (reason,) = frame[frame.reason.str.contains("first batch check", na=False)].reason
    assert reason.startswith(
        "BatchCheckError: torch-dataloader (2 workers): first batch check failed: labels ["
    )
    assert "are not among the dataset's labels [0, 1]" in reason


def test_the_suite_goes_on(fault_run: dict) -> None:
    frame = fault_run["frame"]
    last = frame.iloc[-1]
    assert last.status == "ok", last.reason
    assert last.workers == 1 and last.images_per_s_median > 0


def test_no_worker_survives_a_case(fault_run: dict) -> None:
    for record in fault_run["children"]:
        workers = [
            c
            for c in record["children"]
            if c["cmdline"] == record["self_cmdline"] or c["status"] == "zombie"
        ]
        assert workers == [], record["test"]
