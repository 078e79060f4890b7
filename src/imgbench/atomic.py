"""Atomic writes: a temporary file (or folder) beside the target, fsync, then rename over it.

Readers (and a crash, or a kill) never see half a file or half a folder: either the previous
complete version or the new one is there. Every results file, report and manifest is written
through :func:`atomic_file`; every built dataset and format through :func:`atomic_folder`.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from imgbench.pids import pid_alive


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


@contextlib.contextmanager
def atomic_file(path: Path, mode: str = "wb", **open_kwargs: Any) -> Iterator[IO[Any]]:
    """Open a temporary sibling of ``path`` for writing; it replaces ``path`` only on success."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.fchmod(fd, 0o666 & ~_umask())  # mkstemp makes 0600; results are meant to be shared
    try:
        with os.fdopen(fd, mode, **open_kwargs) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp_name, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            Path(tmp_name).unlink()
        raise
    with contextlib.suppress(OSError):  # make the rename itself durable
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


PARTIAL = ".partial-"  # staging folders are named .TARGET.partial-PID-RANDOM


def remove_stale_partials(target: Path) -> None:
    """Remove the staging folders of writers of ``target`` that were killed (pid gone)."""
    prefix = f".{target.name}{PARTIAL}"
    for folder in target.parent.glob(prefix + "*"):
        pid_text = folder.name[len(prefix) :].split("-")[0]
        if pid_text.isdigit() and pid_alive(int(pid_text)):
            continue
        shutil.rmtree(folder, ignore_errors=True)


def fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_tree(folder: Path) -> None:
    """fsync every file and folder under ``folder``: what is renamed into place is on disk."""
    for dirpath, _, filenames in os.walk(folder):
        for name in filenames:
            fd = os.open(Path(dirpath) / name, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        fsync_dir(Path(dirpath))


@contextlib.contextmanager
def atomic_folder(target: Path, *, fsync: bool = False) -> Iterator[Path]:
    """An empty staging folder beside ``target``; on success it replaces ``target`` whole.

    Nobody ever sees half a folder: a failure removes the staging folder, a kill leaves it under
    a ``.TARGET.partial-PID-*`` name that the next build of ``target`` removes. ``fsync``
    makes every file durable before the rename (formats: a marker must not outlive its data).
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_partials(target)
    staging = target.parent / f".{target.name}{PARTIAL}{os.getpid()}-{uuid.uuid4().hex[:8]}"
    staging.mkdir()
    try:
        yield staging
        if fsync:
            fsync_tree(staging)
        if target.exists():
            shutil.rmtree(target)
        os.replace(staging, target)
        if fsync:
            fsync_dir(target.parent)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
