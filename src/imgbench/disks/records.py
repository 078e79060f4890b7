"""What an emulated disk set up, written down before it is set up, so a killed run's is removed.

A record (``/run/imgbench/disks/<id>.json``) names the owner (pid and start time), the image
file, its mount point and its cgroup folder; the loop device is found again from the image
(``losetup -j``), so a run killed between any two steps leaves nothing the record does not name.
:func:`cleanup_leftovers` (every imgbench start, ``imgbench disk cleanup``) tears down the records
whose owner is gone; :func:`teardown` is also the normal end's tear-down.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path

import psutil

from imgbench.disks import cgroup

RECORDS = Path("/run/imgbench/disks")


@dataclass(frozen=True)
class DiskRecord:
    """Everything one emulated disk may have set up; each part may or may not exist yet."""

    id: str
    pid: int
    started: float  # the owner's psutil create_time: a reused pid is not the owner
    folder: str  # holds the image and the mount point
    image: str
    mount: str
    group: str  # cgroup folder

    @property
    def path(self) -> Path:
        return RECORDS / f"{self.id}.json"

    def write(self) -> None:
        RECORDS.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(self)))
        os.replace(tmp, self.path)

    def owner_alive(self) -> bool:
        try:
            return abs(psutil.Process(self.pid).create_time() - self.started) < 0.01
        except psutil.NoSuchProcess:
            return False


def own_record(id_: str, folder: Path) -> DiskRecord:
    """A record for a disk this process is about to set up in ``folder``."""
    return DiskRecord(
        id=id_,
        pid=os.getpid(),
        started=psutil.Process().create_time(),
        folder=str(folder),
        image=str(folder / "disk.img"),
        mount=str(folder / "mnt"),
        group=str(_group_path(id_)),
    )


def _group_path(id_: str) -> Path:
    controller = cgroup.find_controller()
    root = controller.root if controller else cgroup.CGROUP_ROOT / "blkio"
    return root / f"{cgroup.GROUP_PREFIX}{id_}"


def records() -> list[DiskRecord]:
    found = []
    for path in sorted(RECORDS.glob("*.json")) if RECORDS.is_dir() else []:
        with contextlib.suppress(OSError, ValueError, TypeError):
            found.append(DiskRecord(**json.loads(path.read_text())))
    return found


def mounted(mount: str) -> bool:
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/mounts").read_text().splitlines():
            if line.split()[1] == mount:
                return True
    return False


def loops_of(image: str) -> list[str]:
    """The loop devices backed by ``image`` (``losetup -j``)."""
    if not Path(image).exists() or shutil.which("losetup") is None:
        return []
    out = subprocess.run(
        ["losetup", "-j", image], capture_output=True, text=True, check=False
    ).stdout
    return [line.split(":", 1)[0] for line in out.splitlines() if line.strip()]


def teardown(record: DiskRecord) -> list[str]:
    """Remove whatever of the record exists: cgroup, mount, loop device, image, folder, record.
    Returns the steps that failed (empty: all gone); never raises."""
    failed = []
    try:
        cgroup.remove_group(Path(record.group))
    except OSError as exc:
        failed.append(f"rmdir cgroup {record.group}: {exc}")
    if mounted(record.mount):
        done = subprocess.run(["umount", record.mount], capture_output=True, text=True)
        if done.returncode != 0:  # busy (a straggling fork): detach now, freed when it exits
            done = subprocess.run(["umount", "-l", record.mount], capture_output=True, text=True)
        if done.returncode != 0:
            failed.append(f"umount {record.mount}: {done.stderr.strip()}")
    for loop in loops_of(record.image):
        done = subprocess.run(["losetup", "-d", loop], capture_output=True, text=True)
        if done.returncode != 0:
            failed.append(f"losetup -d {loop}: {done.stderr.strip()}")
    if not mounted(record.mount):
        shutil.rmtree(record.folder, ignore_errors=True)
    if not failed:
        record.path.unlink(missing_ok=True)
    return failed


def cleanup_leftovers() -> list[str]:
    """Tear down the disks whose owner is gone; the ids removed (a failure keeps its record)."""
    removed = []
    for record in records():
        if not record.owner_alive() and not teardown(record):
            removed.append(record.id)
    return removed
