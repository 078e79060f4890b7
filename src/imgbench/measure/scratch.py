"""Where a session builds what its cases need (formats, concatenated files): on the dataset's
disk, never tmpfs (where cold reads are impossible), removed when the session ends.

A killed session cannot remove its folder; the next session removes folders whose process is
gone (the pid is in the folder's name).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from imgbench.pids import remove_dead_owned

SCRATCH_ENV = "IMGBENCH_FORMATS_DIR"  # where to build, instead of beside the dataset
PREFIX = ".imgbench-formats-"


def fs_type(path: Path) -> str:
    """File-system type of the mount holding ``path`` (from /proc/self/mounts), or ""."""
    best, kind = "", ""
    try:
        lines = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return ""
    resolved = str(path.resolve())
    for line in lines:
        parts = line.split()
        if len(parts) < 3:
            continue
        mount = parts[1].replace("\\040", " ")
        inside = resolved == mount or resolved.startswith(mount.rstrip("/") + "/")
        if inside and len(mount) >= len(best):
            best, kind = mount, parts[2]
    return kind


def choose_scratch_parent(dataset_root: Path) -> Path:
    """A writable folder on the dataset's disk, not tmpfs: temp dir first, then beside the data."""
    if os.environ.get(SCRATCH_ENV):
        return Path(os.environ[SCRATCH_ENV])
    candidates = [Path(tempfile.gettempdir()), dataset_root.parent, dataset_root]
    usable = [
        c
        for c in candidates
        if c.is_dir() and os.access(c, os.W_OK) and fs_type(c) not in ("tmpfs", "ramfs", "devtmpfs")
    ]
    device = dataset_root.stat().st_dev
    same_disk = [c for c in usable if c.stat().st_dev == device]
    if same_disk:
        return same_disk[0]
    return usable[0] if usable else Path(tempfile.gettempdir())


def remove_dead_scratch(parent: Path) -> None:
    """Scratch folders of sessions that were killed (their pid is gone)."""
    remove_dead_owned(parent, PREFIX)


def make_scratch(dataset_root: Path) -> Path:
    """A new, empty scratch folder for this process."""
    parent = choose_scratch_parent(dataset_root)
    parent.mkdir(parents=True, exist_ok=True)
    remove_dead_scratch(parent)
    return Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-", dir=parent))
