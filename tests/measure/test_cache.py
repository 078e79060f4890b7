"""Cold-cache control on real files: eviction works on disk and is detected as impossible on tmpfs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from imgbench.measure.cache import (
    evict_and_check,
    reads_in_flight,
    resident_fraction,
    settle,
    warm,
)


def _files(folder: Path, n: int = 4, size: int = 256 * 1024) -> list[Path]:
    paths = []
    for i in range(n):
        path = folder / f"f{i}.bin"
        path.write_bytes(os.urandom(size))
        paths.append(path)
    return paths


def test_warm_then_evict_on_disk(tmp_path: Path) -> None:
    paths = _files(tmp_path)
    warm(paths)
    assert resident_fraction(paths) > 0.9
    check = evict_and_check(paths)
    if not check.ok:
        pytest.skip(f"this filesystem keeps pages cached: {check.method}")
    assert check.resident_after <= 0.02
    assert "posix_fadvise" in check.method
    warm(paths)
    assert resident_fraction(paths) > 0.9


def test_eviction_reported_impossible_on_tmpfs() -> None:
    shm = Path("/dev/shm")
    if not shm.is_dir() or not os.access(shm, os.W_OK):
        pytest.skip("no writable /dev/shm (tmpfs) here")
    folder = shm / f"imgbench-test-{os.getpid()}"
    folder.mkdir()
    try:
        paths = _files(folder, n=2)
        check = evict_and_check(paths)
        assert not check.ok
        assert "eviction failed" in check.method
    finally:
        for path in folder.iterdir():
            path.unlink()
        folder.rmdir()


def test_empty_file_counts_as_nothing_resident(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    assert resident_fraction([empty]) == 0.0


def test_the_disk_under_a_file_reports_its_reads_in_flight(tmp_path: Path) -> None:
    """A cold round waits for the last round's read-ahead to land before it evicts (on a
    throttled HDD it landed after the eviction and warmed every other LMDB round): that wait
    needs the device's in-flight count, found from the file's st_dev in /proc/diskstats."""
    path = tmp_path / "data.bin"
    path.write_bytes(os.urandom(1 << 16))
    pending = reads_in_flight(path)
    if pending is None:
        pytest.skip(f"{tmp_path} is on no block device /proc/diskstats lists (tmpfs, overlay)")
    assert pending >= 0
    assert settle(path, limit_s=2.0) < 2.0  # nothing of ours in flight: it returns
