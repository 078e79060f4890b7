"""Cold-cache control on real files: eviction works on disk and is detected as impossible on tmpfs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from imgbench.measure.cache import evict_and_check, resident_fraction, warm


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
