"""Read limits on one block device for a group of processes: cgroup v1 ``blkio`` or v2 ``io.max``.

The group is a folder ``imgbench-disk-<id>`` under the controller's root. A process joins it by
writing its pid to ``cgroup.procs``; its forks inherit the group, so joining the session process
before the worker server starts throttles every case's reads of that device (and only of it).
v1 writes ``blkio.throttle.read_iops_device`` / ``read_bps_device`` lines ``MAJ:MIN N``; v2 one
``io.max`` line ``MAJ:MIN riops=N rbps=N`` (``max`` where unlimited) after enabling ``+io`` in
the root's ``cgroup.subtree_control``.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from imgbench.disks.catalog import DiskProfile

CGROUP_ROOT = Path("/sys/fs/cgroup")
GROUP_PREFIX = "imgbench-disk-"
V1_IOPS = "blkio.throttle.read_iops_device"
V1_BPS = "blkio.throttle.read_bps_device"


@dataclass(frozen=True)
class Controller:
    """Where read limits can be written: a v1 ``blkio`` hierarchy or a v2 one with ``io``."""

    version: Literal[1, 2]
    root: Path

    def group(self, name: str) -> Path:
        return self.root / name


def find_controller(cgroup_root: Path = CGROUP_ROOT) -> Controller | None:
    """The v1 blkio hierarchy with throttle files, else a v2 hierarchy offering ``io``, else None."""
    for mount in _cgroup_mounts():
        fstype, path, options = mount
        if not path.is_relative_to(cgroup_root):
            continue
        if fstype == "cgroup" and "blkio" in options and (path / V1_IOPS).exists():
            return Controller(1, path)
    for fstype, path, _options in _cgroup_mounts():
        if fstype != "cgroup2" or not path.is_relative_to(cgroup_root):
            continue
        with contextlib.suppress(OSError):
            if "io" in (path / "cgroup.controllers").read_text().split():
                return Controller(2, path)
    return None


def _cgroup_mounts() -> list[tuple[str, Path, set[str]]]:
    mounts = []
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/mounts").read_text().splitlines():
            fields = line.split()
            if len(fields) >= 4 and fields[2] in ("cgroup", "cgroup2"):
                mounts.append((fields[2], Path(fields[1]), set(fields[3].split(","))))
    return mounts


def limit_files(version: int, device: str, profile: DiskProfile) -> dict[str, str]:
    """The files and the text written to them to cap reads of ``device`` (``MAJ:MIN``)."""
    if version == 1:
        files = {}
        if profile.read_iops is not None:
            files[V1_IOPS] = f"{device} {profile.read_iops}"
        if profile.read_bytes_per_s is not None:
            files[V1_BPS] = f"{device} {profile.read_bytes_per_s}"
        return files
    iops = "max" if profile.read_iops is None else str(profile.read_iops)
    bps = "max" if profile.read_bytes_per_s is None else str(profile.read_bytes_per_s)
    return {"io.max": f"{device} riops={iops} rbps={bps}"}


def create_group(controller: Controller, group: Path, device: str, profile: DiskProfile) -> None:
    """Make the group and write the profile's limits on ``device`` into it."""
    if controller.version == 2:
        control = controller.root / "cgroup.subtree_control"
        if "io" not in control.read_text().split():
            control.write_text("+io")
    group.mkdir()
    for name, text in limit_files(controller.version, device, profile).items():
        (group / name).write_text(text + "\n")


def join(group: Path, pid: int | None = None) -> None:
    """Move process ``pid`` (this one by default) into the group; its later forks inherit it."""
    (group / "cgroup.procs").write_text(f"{pid or os.getpid()}\n")


def remove_group(group: Path) -> None:
    """Move every process still in the group to the root, then remove the group (if it exists)."""
    if not group.is_dir():
        return
    root = group.parent
    for _ in range(5):
        procs = [p for p in (group / "cgroup.procs").read_text().split() if p]
        for pid in procs:
            with contextlib.suppress(OSError):  # exited meanwhile
                (root / "cgroup.procs").write_text(pid + "\n")
        try:
            group.rmdir()
            return
        except OSError:
            continue  # a fork joined meanwhile: move it out too
    group.rmdir()


def read_limits(group: Path, version: int) -> dict[str, str]:
    """What the group's limit files hold now (for tests and the row's evidence)."""
    names = (V1_IOPS, V1_BPS) if version == 1 else ("io.max",)
    return {name: (group / name).read_text().strip() for name in names}
