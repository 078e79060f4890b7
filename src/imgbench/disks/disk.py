"""Set up an emulated disk: sparse image -> loop device -> ext4 -> mount -> throttling cgroup.

``emulated_disk(profile, size)`` yields an :class:`EmulatedDisk` and always tears it down: at the
normal end, on an exception, Ctrl-C and SIGTERM (unwinds like Ctrl-C while the disk is up: pytest
then still ends its session);
after ``kill -9`` its record (written before anything is set up, ``records``) lets the next start
remove it. Where it cannot work it raises :class:`DiskUnavailableError` with one line saying why.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess
import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from imgbench.disks import cgroup
from imgbench.disks.catalog import DiskProfile
from imgbench.disks.records import cleanup_leftovers, own_record, teardown

DEFAULT_PARENT = Path("/var/tmp")
MIN_IMAGE_BYTES = 2**30
TOOLS = ("losetup", "mkfs.ext4", "mount", "umount")


class DiskUnavailableError(RuntimeError):
    """An emulated disk cannot be set up here; ``str(exc)`` is the one-line reason."""


@dataclass(frozen=True)
class EmulatedDisk:
    """A mounted, throttled loop device: where to put files, and which processes are throttled."""

    profile: DiskProfile
    mount: Path
    loop: str  # /dev/loopN
    device: str  # MAJ:MIN of the loop device
    group: Path  # cgroup folder holding the limits
    cgroup_version: int

    def join(self, pid: int | None = None) -> None:
        """Throttle process ``pid`` (this one by default) and every process it forks later."""
        cgroup.join(self.group, pid)

    def columns(self) -> dict[str, object]:
        return self.profile.columns()


def unavailable_reason() -> str | None:
    """Why an emulated disk cannot be set up here (cheap checks), or None."""
    if os.geteuid() != 0:
        return "emulated disks need root (loop devices, mount, cgroups)"
    if not Path("/dev/loop-control").exists():
        return "no loop devices here (/dev/loop-control missing)"
    missing = [tool for tool in TOOLS if shutil.which(tool) is None]
    if missing:
        return f"missing {', '.join(missing)} (apt install util-linux mount e2fsprogs)"
    if cgroup.find_controller() is None:
        return "no cgroup read throttling here (neither v1 blkio nor v2 io.max)"
    return None


def image_bytes(data_bytes: int) -> int:
    """The sparse image's size for a dataset of ``data_bytes``: room for the copy, a format
    store of each of the session's formats (each about the dataset's size), the write cases'
    outputs and the file system's own overhead (sparse: only what is written takes room; at 2x
    and 256 MiB the disk session of make bench ran out of room at its fifth store)."""
    return max(MIN_IMAGE_BYTES, 8 * data_bytes + 256 * 2**20)


def tree_bytes(path: Path) -> int:
    """The bytes of the files under ``path`` (or of ``path``)."""
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _run(*cmd: str) -> str:
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise DiskUnavailableError(
            f"{' '.join(cmd)} failed: {done.stderr.strip() or done.returncode}"
        )
    return done.stdout.strip()


@contextmanager
def _sigterm_unwinds() -> Iterator[None]:
    """While the disk is up, SIGTERM raises KeyboardInterrupt so the tear-down runs (main thread
    only, and only where nobody installed a handler already). Not SystemExit: pytest would fail
    the running test with it and go on measuring."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGTERM)

    def _exit(signum: int, _frame: FrameType | None) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    if previous in (signal.SIG_DFL, None):
        signal.signal(signal.SIGTERM, _exit)
    try:
        yield
    finally:
        if previous in (signal.SIG_DFL, None):
            signal.signal(signal.SIGTERM, signal.SIG_DFL)


@contextmanager
def emulated_disk(
    profile: DiskProfile, size_bytes: int, parent: Path = DEFAULT_PARENT
) -> Iterator[EmulatedDisk]:
    """A throttled ext4 file system of ``size_bytes`` (sparse) for ``profile``, torn down at exit."""
    reason = unavailable_reason()
    if reason is not None:
        raise DiskUnavailableError(reason)
    controller = cgroup.find_controller()
    assert controller is not None
    cleanup_leftovers()
    id_ = f"{os.getpid()}-{secrets.token_hex(3)}"
    record = own_record(id_, parent / f"{cgroup.GROUP_PREFIX}{id_}")
    record.write()  # before anything exists: a kill -9 from here on is cleaned by the next start
    with _sigterm_unwinds():
        try:
            folder, mount, group = Path(record.folder), Path(record.mount), Path(record.group)
            mount.mkdir(parents=True)
            with open(record.image, "wb") as image:
                image.truncate(size_bytes)
            loop = _run("losetup", "--find", "--show", record.image)
            # with a journal (-j): what a case discards is deleted on it (CaseContext.discard)
            _run(
                "mkfs.ext4", "-q", "-F", "-j", "-E", "lazy_itable_init=0,lazy_journal_init=0", loop
            )
            _run("mount", "-o", "noatime", loop, str(mount))
            rdev = Path(loop).stat().st_rdev
            device = f"{os.major(rdev)}:{os.minor(rdev)}"
            try:
                cgroup.create_group(controller, group, device, profile)
            except OSError as exc:
                raise DiskUnavailableError(f"cannot set read limits in {group}: {exc}") from exc
            assert folder.is_dir()
            yield EmulatedDisk(profile, mount, loop, device, group, controller.version)
        finally:
            _leave(Path(record.group))
            failed = teardown(record)
            if failed:  # the record stays: the next start (or ``imgbench disk cleanup``) retries
                warnings.warn(
                    "emulated disk tear-down incomplete: " + "; ".join(failed), stacklevel=2
                )


def _leave(group: Path) -> None:
    """Move this process out of the group if it joined (rmdir needs the group empty)."""
    procs = group / "cgroup.procs"
    if procs.exists() and str(os.getpid()) in procs.read_text().split():
        cgroup.join(group.parent)
