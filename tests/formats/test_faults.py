"""Faults: a killed writer, a full disk, files that vanish or change, foreign folders."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from imgbench.formats.base import FormatError, build_format, open_format, read_meta
from imgbench.formats.registry import get_format

REPO = Path(__file__).resolve().parents[2]


def _script(body: str) -> str:
    return textwrap.dedent(
        """
        import sys
        from pathlib import Path
        sys.path.insert(0, {repo!r})
        from imgbench.datasets.scan import scan
        from imgbench.formats.base import build_format
        manifest = scan(Path(sys.argv[1]), use_cache=False)
        """
    ).format(repo=str(REPO)) + textwrap.dedent(body)


def test_killed_writer_leaves_nothing_that_reads_as_complete(
    photo_dir: Path, tmp_path: Path
) -> None:
    target = tmp_path / "out" / "lmdb"
    code = _script(
        """
        from tests.formats.slow_format import SPEC
        build_format(SPEC, manifest.root, manifest.entries, Path(sys.argv[2]), progress=False)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", code, str(photo_dir), str(target)])
    try:
        deadline = time.monotonic() + 60
        partial = []
        while time.monotonic() < deadline:
            partial = [
                p for p in target.parent.glob(".lmdb.partial-*") if (p / "progress").exists()
            ]
            if partial and int((partial[0] / "progress").read_text() or 0) >= 2:
                break
            assert proc.poll() is None, "the writer finished before it could be killed"
            time.sleep(0.05)
        assert partial, "the writer never started"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGKILL
    assert not target.exists()
    (leftover,) = target.parent.glob(".lmdb.partial-*")
    with pytest.raises(FormatError, match="not a complete imgbench format"):
        open_format(get_format("lmdb"), leftover)
    with pytest.raises(FormatError, match="not a complete imgbench format"):
        open_format(get_format("lmdb"), target)
    # the next build removes the dead writer's leftovers and completes
    from imgbench.datasets.scan import scan

    manifest = scan(photo_dir, use_cache=False)
    report = build_format(get_format("lmdb"), manifest.root, manifest.entries, target)
    assert report.meta.count == len(manifest.entries)
    assert list(target.parent.glob(".lmdb.partial-*")) == []


def test_full_disk_fails_cleanly(photo_dir: Path, tmp_path: Path) -> None:
    """RLIMIT_FSIZE makes writes fail with EFBIG part-way, as a full disk does with ENOSPC."""
    target = tmp_path / "out" / "tar"
    code = _script(
        """
        import resource, signal
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (200_000, 200_000))
        from imgbench.formats.registry import get_format
        try:
            build_format(get_format("tar"), manifest.root, manifest.entries, Path(sys.argv[2]))
        except OSError as exc:
            print("OSError", exc.errno)
            raise SystemExit(3)
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(photo_dir), str(target)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert not target.exists()
    assert list(target.parent.iterdir()) == []  # the partial folder was removed


def test_vanished_and_changed_files_are_skipped_with_reasons(
    photo_copy: Path, tmp_path: Path
) -> None:
    from imgbench.datasets.scan import scan

    manifest = scan(photo_copy, use_cache=False)
    gone, changed = manifest.entries[0], manifest.entries[1]
    (photo_copy / gone.path).unlink()
    (photo_copy / changed.path).write_bytes(b"\xff\xd8\xff not the same file")
    for name in ("npy-packed", "hdf5-array"):  # a bytes format and a decoding (pool) format
        report = build_format(get_format(name), manifest.root, manifest.entries, tmp_path / name)
        reasons = dict(report.skipped)
        assert set(reasons) == {gone.path, changed.path}
        assert reasons[gone.path].startswith("unreadable")
        assert "changed since the dataset was scanned" in reasons[changed.path]
        meta = read_meta(report.path)
        assert meta.count == len(manifest.entries) - 2
        assert len(meta.skipped) == 2
        with open_format(get_format(name), report.path) as reader:
            assert len(reader) == meta.count


def test_nothing_readable_is_an_error_and_leaves_nothing(photo_copy: Path, tmp_path: Path) -> None:
    from imgbench.datasets.scan import scan

    manifest = scan(photo_copy, use_cache=False)
    for entry in manifest.entries:
        (photo_copy / entry.path).unlink()
    with pytest.raises(FormatError, match="no record could be written"):
        build_format(get_format("folder"), manifest.root, manifest.entries, tmp_path / "out" / "f")
    assert list((tmp_path / "out").iterdir()) == []


def test_open_refuses_another_formats_folder(photo_manifest, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    build_format(
        get_format("sqlite"), photo_manifest.root, photo_manifest.entries[:3], tmp_path / "s"
    )
    with pytest.raises(FormatError, match="holds format 'sqlite'"):
        open_format(get_format("lmdb"), tmp_path / "s")
