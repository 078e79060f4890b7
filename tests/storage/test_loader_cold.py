"""Loader rounds on ``--imgbench-disk hdd`` read cold from the loop device, and leave nothing."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import pytest

from imgbench.storage.disk import unavailable_reason
from imgbench.storage.records import records
from tests.conftest import run_pytest
from tests.shared_runs import BENCHES, REPO, write_photos
from tests.storage.test_disk_session import _leftover_ids

REASON = unavailable_reason()
PROFILE = """
[tool.imgbench.profiles.diskloader]
base = "quick"
rounds = 2
warmup_rounds = 1

[tool.imgbench.profiles.diskloader.loader]
libraries = ["torch-dataloader"]
batch_size = 8
worker_sweep = [2]
sweep_pipelines = ["default"]
extra_pipelines = ["lmdb", "tar"]
baseline_pipeline = "default"
"""


@pytest.mark.skipif(REASON is not None, reason=f"emulated disk: {REASON}")
def test_loader_rounds_read_the_emulated_disk_cold(tmp_path: Path) -> None:
    dataset = write_photos(tmp_path / "photos")
    (tmp_path / "pyproject.toml").write_text(PROFILE)
    proc = run_pytest(
        [
            str(BENCHES / "bench_loaders.py"),
            "-k",
            "fork",  # the 2-worker rows (0 workers have no start method)
            f"--dataset={dataset}",
            "--imgbench-profile=diskloader",
            "--imgbench-disk=hdd",
            f"--imgbench-results={tmp_path / 'results'}",
        ],
        cwd=tmp_path,
        timeout=170,
        env={
            **os.environ,
            "PYTHONPATH": str(REPO),
            "IMGBENCH_PYPROJECT": str(tmp_path / "pyproject.toml"),
        },
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    (parquet,) = (tmp_path / "results").glob("*.parquet")
    frame = pd.read_parquet(parquet)
    assert set(frame["stage"]) == {"loader"}
    assert set(frame["disk_profile"]) == {"hdd"}
    ok = frame[frame["status"] == "ok"]
    assert not ok.empty, frame[["case_id", "reason"]].to_string()
    # the folder and a store read by offset through a file handle (tar shards) read cold
    assert {v.split("-")[0] for v in ok["variant"]} == {"files", "tar"}, frame[
        ["case_id", "status", "reason"]
    ].to_string()
    assert set(ok["cache_state"]) == {"cold"}
    assert set(ok["storage_device_kind"]) == {"loop"}
    assert (ok["io_reads_per_s"] > 0).all()  # the timed rounds read the loop device
    assert ok["cache_method"].str.contains("DONTNEED").all()
    # a store the workers keep mapped cannot read cold: skipped with why, never a warm figure
    skipped = frame[frame["status"] == "skipped"]
    assert skipped["reason"].str.contains("cold").all(), skipped["reason"].tolist()
    assert _leftover_ids() == set()
    assert not any(not r.owner_alive() for r in records())
