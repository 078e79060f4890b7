"""A bench session with ``--imgbench-disk hdd``: its rows say so, and it leaves nothing behind."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from imgbench.storage.cgroup import GROUP_PREFIX, find_controller
from imgbench.storage.disk import unavailable_reason
from imgbench.storage.records import records
from tests.conftest import run_pytest
from tests.shared_runs import BENCHES, REPO, write_photos

REASON = unavailable_reason()


def _leftovers() -> tuple[str, str, list[str]]:
    loops = subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout
    mounts = Path("/proc/self/mounts").read_text()
    controller = find_controller()
    groups = (
        [] if controller is None else [p.name for p in controller.root.glob(GROUP_PREFIX + "*")]
    )
    return (
        "\n".join(line for line in loops.splitlines() if GROUP_PREFIX in line),
        "\n".join(line for line in mounts.splitlines() if GROUP_PREFIX in line),
        groups,
    )


@pytest.mark.skipif(REASON is not None, reason=f"emulated disk: {REASON}")
def test_hdd_session_rows_and_nothing_left(tmp_path: Path) -> None:
    before = _leftovers()
    dataset = write_photos(tmp_path / "photos")
    proc = run_pytest(
        [
            str(BENCHES / "bench_formats.py"),
            "-k",
            "image-folder and read",
            f"--dataset={dataset}",
            "--imgbench-profile=quick",
            "--imgbench-rounds=1",
            "--imgbench-disk=hdd",
            f"--imgbench-results={tmp_path / 'results'}",
        ],
        cwd=tmp_path,
        timeout=170,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    (parquet,) = (tmp_path / "results").glob("*.parquet")
    frame = pd.read_parquet(parquet)
    assert len(frame) >= 1 and set(frame["status"]) == {"ok"}, frame[["case_id", "reason"]]
    assert set(frame["disk_profile"]) == {"hdd"}
    assert set(frame["disk_read_iops_limit"]) == {150}
    assert set(frame["disk_read_bytes_per_s_limit"]) == {180_000_000}
    assert set(frame["dataset_name"]) == {"photos"}  # the copy keeps the dataset's name
    if "storage_device_kind" in frame and frame["storage_device_kind"].notna().all():
        assert set(frame["storage_device_kind"]) == {"loop"}  # read from the emulated disk
    assert _leftovers() == before
    assert not any(r.pid > 0 and not r.owner_alive() for r in records())
