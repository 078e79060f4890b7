"""One bench session on ``--imgbench-disk hdd`` (readers, formats and the DataLoader): its rows
say so, cold reads come from the loop device, the format writes' rounds leave nothing set aside
on the disk, and it leaves nothing behind. A session that cannot set up its disk skips every case
with why."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd
import pytest

from imgbench.disks.cgroup import GROUP_PREFIX, find_controller
from imgbench.disks.disk import unavailable_reason
from imgbench.disks.records import records
from tests.conftest import run_pytest
from tests.shared_runs import BENCHES, REPO, write_photos

REASON = unavailable_reason()
# the cold reader and format rows, the format writes and the 2-worker loader rows, in one
# session: a disk set up (and the photos copied onto it) once
PROFILE = """
[tool.imgbench.profiles.disktest]
base = "quick"
rounds = 2
warmup_rounds = 1

[tool.imgbench.profiles.disktest.read]
libraries = ["pillow"]
codecs = ["jpeg"]
memory_threads = []
disk_threads = [1]
disk_codecs = ["jpeg"]
native = false
batch_sizes = []

[tool.imgbench.profiles.disktest.format]
libraries = ["folder", "lmdb", "recordio"]
storages = ["local"]
caches = ["cold"]
orders = ["shuffled"]
payloads = ["bytes"]
raw_ceiling = false

[tool.imgbench.profiles.disktest.loader]
libraries = ["torch-dataloader"]
batch_size = 8
worker_sweep = [2]
sweep_pipelines = ["default"]
extra_pipelines = ["lmdb", "tar"]
baseline_pipeline = "default"
"""


def _leftover_ids() -> set[str]:
    """The emulated disks (by id) whose loop device, mount or cgroup exists and whose owner is
    not a live process (another test's disk, up meanwhile under pytest-xdist, is not one)."""
    loops = subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout
    mounts = Path("/proc/self/mounts").read_text()
    controller = find_controller()
    groups = (
        [] if controller is None else [p.name for p in controller.root.glob(GROUP_PREFIX + "*")]
    )
    found = set(re.findall(GROUP_PREFIX + r"([0-9]+-[0-9a-f]+)", loops + mounts + " ".join(groups)))
    live = {r.id for r in records() if r.owner_alive()}
    return found - live


@pytest.fixture(scope="module")
def hdd_session(tmp_path_factory: pytest.TempPathFactory) -> tuple[pd.DataFrame, dict]:
    """The rows of the one session (it must pass), and what ``discard_probe`` saw at its end;
    each test checks that nothing was left."""
    if REASON is not None:
        pytest.skip(f"emulated disk: {REASON}")
    tmp_path = tmp_path_factory.mktemp("hdd-session")
    dataset = write_photos(tmp_path / "photos")
    (tmp_path / "pyproject.toml").write_text(PROFILE)
    probe = tmp_path / "discard-probe.json"
    proc = run_pytest(
        [
            str(BENCHES / "bench_readers.py"),
            str(BENCHES / "bench_formats.py"),
            str(BENCHES / "bench_loaders.py"),
            "-k",
            # cold reads; the format writes; the 2-worker loader rows (0 workers have no start
            # method)
            "cold or write or fork",
            f"--dataset={dataset}",
            "--imgbench-profile=disktest",
            "--imgbench-disk=hdd",
            f"--imgbench-results={tmp_path / 'results'}",
            "-p",
            "tests.storage.discard_probe",
        ],
        cwd=tmp_path,
        timeout=300,
        env={
            **os.environ,
            "PYTHONPATH": str(REPO),
            "IMGBENCH_PYPROJECT": str(tmp_path / "pyproject.toml"),
            "DISCARD_PROBE_OUT": str(probe),
        },
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    (parquet,) = (tmp_path / "results").glob("*.parquet")
    return pd.read_parquet(parquet), json.loads(probe.read_text())


@pytest.fixture(scope="module")
def hdd_run(hdd_session: tuple[pd.DataFrame, dict]) -> pd.DataFrame:
    return hdd_session[0]


def test_hdd_session_rows_and_nothing_left(hdd_run: pd.DataFrame) -> None:
    frame = hdd_run[(hdd_run["stage"] != "loader") & (hdd_run["mode"] != "write")]
    assert set(frame["status"]) == {"ok"}, frame[["case_id", "reason"]].to_string()
    assert set(frame["stage"]) == {"read", "format"}
    assert set(frame["cache_state"]) == {"cold"}
    assert set(frame["disk_profile"]) == {"hdd"}
    assert set(frame["disk_read_iops_limit"]) == {150}
    assert set(frame["disk_read_bytes_per_s_limit"]) == {180_000_000}
    assert set(frame["dataset_name"]) == {"photos"}  # the copy keeps the dataset's name
    if "storage_device_kind" in frame:  # read from the emulated disk, and cold: from the device
        assert set(frame["storage_device_kind"]) == {"loop"}
        assert (frame["io_reads_per_s"] > 0).all()
    assert _leftover_ids() == set()
    assert not any(not r.owner_alive() for r in records())


def test_write_rounds_leave_nothing_set_aside_on_the_emulated_disk(
    hdd_session: tuple[pd.DataFrame, dict],
) -> None:
    """On the emulated disk each write round's output is deleted before the next round (a fresh
    ext4 with a journal: a freed inode does not slow the next creations there), not set aside
    until the session ends as on the real disk: set aside, the `disk` profile's write rounds
    (warm-up, calibration, 10 rounds, re-timed ones) kept 11-26 copies of each 10 MB store and
    filled its 1 GiB disk at the fourth format (RecordIO's write row failed with a
    FileNotFoundError, its cold read and loader rows with ENOSPC)."""
    frame, probe = hdd_session
    writes = frame[frame["mode"] == "write"]
    formats = {json.loads(p)["format"] for p in writes["params_json"]}
    assert formats == {"folder", "lmdb", "recordio"}, writes[["case_id", "status"]].to_string()
    assert set(writes["status"]) == {"ok"}, writes[["case_id", "reason"]].to_string()
    assert set(writes["disk_profile"]) == {"hdd"}
    assert "imgbench-disk-" in probe["stores"], probe  # the stores were on the emulated disk
    assert probe["set_aside"] == [], probe
    assert _leftover_ids() == set()


def test_loader_rounds_read_the_emulated_disk_cold(hdd_run: pd.DataFrame) -> None:
    frame = hdd_run[hdd_run["stage"] == "loader"]
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


def test_a_session_that_cannot_set_up_its_disk_skips_every_case_with_why() -> None:
    """As ``nobody`` (where root can switch to it): the rows are skipped with the one line."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to run a session as nobody")
    # pytest's own temp folders are root's alone (mode 700): nobody needs one it can enter
    with tempfile.TemporaryDirectory(prefix="imgbench-nobody-") as folder:
        _as_nobody(Path(folder))


def _as_nobody(tmp_path: Path) -> None:
    dataset = write_photos(tmp_path / "photos")
    tmp_path.chmod(0o777)
    for path in [dataset, *dataset.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    proc = subprocess.run(
        [
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            str(BENCHES / "bench_formats.py"),
            "-k",
            "image-folder and read",
            f"--dataset={dataset}",
            "--imgbench-profile=quick",
            "--imgbench-disk=hdd",
            f"--imgbench-results={tmp_path / 'results'}",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(REPO), "HOME": str(tmp_path)},
    )
    parquets = list((tmp_path / "results").glob("*.parquet"))
    if not parquets:
        pytest.skip(f"a session as nobody did not run here: {proc.stderr.strip()[-300:]}")
    frame = pd.read_parquet(parquets[0])
    assert set(frame["status"]) == {"skipped"}
    assert set(frame["reason"]) == {
        "emulated disk hdd unavailable: emulated disks need root (loop devices, mount, cgroups)"
    }
    assert set(frame["disk_profile"]) == {"hdd"}
