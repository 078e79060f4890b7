"""The disk under a row: the device, its mount, and its diskstats deltas over the timed rounds."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from imgbench.measure.case import Case
from imgbench.measure.rounds import Measurement
from imgbench.measure.storage import (
    IoMeter,
    device_facts,
    disk_sample,
    mount_of,
    storage_facts,
)
from tests.measure.conftest import Engine

MOUNTINFO = """\
22 27 0:21 / /proc rw,relatime - proc proc rw
27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard
30 27 0:27 / /data\\040set ro,noatime shared:1 - xfs /dev/sdb1 rw,attr2
31 27 0:28 / /data\\040set/inner rw - tmpfs tmpfs rw,size=4k
"""


def test_mount_of_picks_the_longest_mount_point_and_unescapes() -> None:
    assert mount_of(Path("/work/x"), MOUNTINFO) == ("ext4", "rw,relatime,discard")
    assert mount_of(Path("/data set/a.jpg"), MOUNTINFO) == ("xfs", "ro,noatime,rw,attr2")
    assert mount_of(Path("/data set/inner/b"), MOUNTINFO) == ("tmpfs", "rw,size=4k")
    assert mount_of(Path("/data settle"), MOUNTINFO) == ("ext4", "rw,relatime,discard")
    assert mount_of(Path("/x"), "") is None


def test_disk_sample_reads_the_devices_line() -> None:
    text = " 254 0 vda 10 2 800 30 5 0 40 7 0 25 60 0 0 0 0\n 254 1 vda1 1 0 8 1 0 0 0 0 0 1 1\n"
    sample = disk_sample("vda", text)
    assert sample is not None
    assert (sample.reads, sample.sectors, sample.read_ms, sample.io_ms) == (10, 800, 30, 25)
    assert disk_sample("sdz", text) is None


def test_a_path_on_no_block_device_has_null_facts_and_no_counters() -> None:
    shm = Path("/dev/shm")
    mount = mount_of(shm)
    if mount is None or mount[0] != "tmpfs":
        pytest.skip("/dev/shm is not a tmpfs here")
    facts = storage_facts(shm)
    assert facts is not None and facts.device is None and facts.kind == "none"
    assert facts.fs == "tmpfs" and facts.columns()["storage_rotational"] is None
    meter = IoMeter(facts.device)
    with meter:
        pass
    assert meter.columns() == {}
    assert device_facts(0, 4095) is None  # an anonymous device number: no error


def test_a_loop_device_says_so() -> None:
    if not Path("/sys/dev/block/7:0").exists():
        pytest.skip("no loop device 7:0 on this machine")
    found = device_facts(7, 0)
    assert found is not None and found[0] == "loop0" and found[2] == "loop"


def _facts_on_a_disk(path: Path) -> tuple[str, str]:
    facts = storage_facts(path)
    assert facts is not None
    if facts.device is None:
        pytest.skip(f"{path} is on no block device here ({facts.fs})")
    return facts.device, facts.kind


def test_a_cold_read_shows_in_the_devices_counters(tmp_path: Path) -> None:
    device, kind = _facts_on_a_disk(tmp_path)
    assert kind in ("disk", "partition", "loop", "device-mapper", "md-raid", "zram")
    if disk_sample(device) is None:
        pytest.skip(f"/proc/diskstats does not list {device}")
    path = tmp_path / "cold.bin"
    path.write_bytes(os.urandom(4 << 20))
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)  # out of the page cache
    finally:
        os.close(fd)
    meter = IoMeter(device)
    with meter:
        assert len(path.read_bytes()) == 4 << 20
    columns = meter.columns()
    assert columns["io_window_s"] > 0 and columns["io_reads_per_s"] > 0
    assert columns["io_read_kb_per_s"] * columns["io_window_s"] >= 4 * 1024 * 0.9
    assert 0 <= columns["io_util_pct"] <= 100


def test_rows_carry_their_disk(engine: Engine, tiny_dataset: Path) -> None:
    """A read row names the dataset's disk; a format row the disk of the store it built; both
    carry the device's counters over the timed rounds when the kernel lists the device."""

    def keep(case: Case) -> bool:
        if case.stage == "format":
            return case.library == "raw-file" and case.params["mode"] == "read"
        return case.library == "pillow" and case.params.get("codec") == "jpeg"

    # in this process: the columns are the case's, whatever runs it (worker path: test_worker.py)
    here = {"rounds": 2, "process_model": "in-process"}
    outcomes = [*engine("read", keep, **here), *engine("format", keep, **here)]
    assert {c.stage for c, _ in outcomes} == {"read", "format"}
    expected = storage_facts(tiny_dataset)
    assert expected is not None
    for case, outcome in outcomes:
        assert isinstance(outcome, Measurement), (case.case_id, outcome)
        columns = outcome.columns
        assert columns["storage_fs"] is not None
        if case.stage == "read":
            assert columns["storage_device"] == expected.device
            assert columns["storage_fs"] == expected.fs
        if columns["storage_device"] is None:
            assert "io_reads_per_s" not in columns
        else:
            assert columns["io_window_s"] > 0 and columns["io_reads_per_s"] >= 0
