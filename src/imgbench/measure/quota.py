"""A cgroup CPU quota (Docker's ``--cpus``, Kubernetes' CPU limit): how much CPU time this
process tree may use per period, and how often it has been held back.

The kernel enforces a quota per period (100 ms unless set): processes that use it up early are
throttled, all of them, until the next period starts. A round shorter than a period then times
either a stretch of full speed or one that includes a wait: under a one-CPU quota on two cores,
the 35 ms rounds of a two-thread loader ran 30-43 ms or 77-88 ms, and the median of fifteen fell
on whichever kind happened to be more common (0.45 of the unthrottled figure instead of about
0.5; lab/machine_check.py, 2026-11-29). A user's training epoch spans thousands of periods and
sees their average. So a case the quota throttles times rounds of ``ROUND_PERIODS`` periods
(:func:`round_floor_s`), and its row says how often the quota held it back.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

PROC_CGROUP = Path("/proc/self/cgroup")
V2_ROOT = Path("/sys/fs/cgroup")
V1_MOUNTS = (Path("/sys/fs/cgroup/cpu"), Path("/sys/fs/cgroup/cpu,cpuacct"))
# a round of a throttled case spans this many periods: a round then holds 9 to 11 throttled
# stretches, not 0 or 1, so one round's figure is within about 5% of the average under a quota
# of half the CPUs the case wants
ROUND_PERIODS = 10
WARM_PERIODS = 3  # a case's warm-up lasts this many periods under a quota, to see if it throttles
# throttled if its processes waited for quota longer than this share of the warm-up (summed over
# CPUs): a round can be off by about as much, and a case that overdraws the quota by a helper
# thread's millisecond now and then should not pay for ten-period rounds
MIN_WAIT_SHARE = 0.02


@dataclass(frozen=True)
class CpuQuota:
    """The quota in force for this process: ``cpus`` per ``period_s``, read from ``folder``."""

    cpus: float
    period_s: float
    folder: Path

    def round_floor_s(self) -> float:
        """The shortest round a case this quota throttles may time."""
        return ROUND_PERIODS * self.period_s

    def throttling(self) -> Throttling | None:
        """The cgroup's counters now (``cpu.stat``), or None where they cannot be read."""
        values: dict[str, int] = {}
        with contextlib.suppress(OSError, ValueError):
            for line in (self.folder / "cpu.stat").read_text().splitlines():
                key, _, value = line.partition(" ")
                values[key] = int(value)
        if "nr_periods" not in values or "nr_throttled" not in values:
            return None
        if "throttled_time" in values:  # v1: nanoseconds
            waited_s = values["throttled_time"] / 1e9
        else:  # v2: microseconds
            waited_s = values.get("throttled_usec", 0) / 1e6
        return Throttling(values["nr_periods"], values["nr_throttled"], waited_s)


@dataclass(frozen=True)
class Throttling:
    """A cgroup's throttling counters: periods seen, periods in which it was held back, and the
    time its processes waited (summed over CPUs)."""

    periods: int
    throttled: int
    waited_s: float

    def since(self, before: Throttling) -> Throttling:
        return Throttling(
            self.periods - before.periods,
            self.throttled - before.throttled,
            self.waited_s - before.waited_s,
        )

    @property
    def share(self) -> float | None:
        """Throttled periods over the periods in which the cgroup ran; None: none ran."""
        return self.throttled / self.periods if self.periods > 0 else None


def cpu_quota(
    proc_cgroup: Path = PROC_CGROUP,
    v2_root: Path = V2_ROOT,
    v1_mounts: tuple[Path, ...] = V1_MOUNTS,
) -> CpuQuota | None:
    """This process's cgroup CPU quota (v2 ``cpu.max``, v1 ``cpu.cfs_quota_us`` over
    ``cpu.cfs_period_us``), or None where there is none or it cannot be read."""
    with contextlib.suppress(OSError, ValueError):
        for line in proc_cgroup.read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            names = controllers.split(",")
            if controllers == "":  # v2: one unified hierarchy
                found = v2_quota(v2_root, path)
            elif "cpu" in names:
                found = v1_quota(path, v1_mounts)
            else:
                continue
            if found is not None:
                return found
    return None


def v2_quota(root: Path, path: str) -> CpuQuota | None:
    """``cpu.max`` of the process's cgroup (or of the root, in a container's namespace)."""
    for folder in (root / path.lstrip("/"), root):
        with contextlib.suppress(OSError, ValueError):
            quota, period = (folder / "cpu.max").read_text().split()
            if quota == "max":
                return None
            return CpuQuota(int(quota) / int(period), int(period) / 1e6, folder)
    return None


def v1_quota(path: str, mounts: tuple[Path, ...] = V1_MOUNTS) -> CpuQuota | None:
    """``cpu.cfs_quota_us`` (-1: none) over ``cpu.cfs_period_us`` of the process's v1 cgroup."""
    for mount in mounts:
        for folder in (mount / path.lstrip("/"), mount):
            with contextlib.suppress(OSError, ValueError):
                quota = int((folder / "cpu.cfs_quota_us").read_text())
                period = int((folder / "cpu.cfs_period_us").read_text())
                return None if quota <= 0 else CpuQuota(quota / period, period / 1e6, folder)
    return None


class QuotaGroup:
    """A cgroup with a CPU quota that processes can be started in (lab/machine_check.py, the
    tests): v1's cpu controller where it is mounted, else v2's ``cpu.max``. Root only."""

    def __init__(self, name: str, cpus: float, period_us: int = 100_000) -> None:
        self.v1 = (V1_MOUNTS[0] / "cpu.cfs_quota_us").exists()
        if not self.v1 and "cpu" not in _read(V2_ROOT / "cgroup.subtree_control").split():
            raise OSError("no cgroup cpu controller here (v1 cpu, or cpu in v2's subtree_control)")
        self.parent = V1_MOUNTS[0] if self.v1 else V2_ROOT
        self.path = self.parent / name
        self.cpus, self.period_us = cpus, period_us

    def create(self) -> None:
        self.path.mkdir()
        quota = int(self.cpus * self.period_us)
        if self.v1:
            (self.path / "cpu.cfs_period_us").write_text(f"{self.period_us}\n")
            (self.path / "cpu.cfs_quota_us").write_text(f"{quota}\n")
        else:
            (self.path / "cpu.max").write_text(f"{quota} {self.period_us}\n")

    def enter(self) -> None:
        """Move the calling process (a child between fork and exec: ``preexec_fn``) into the
        group; every process it starts is then inside too."""
        (self.path / "cgroup.procs").write_text(f"{os.getpid()}\n")

    def remove(self) -> None:
        """Empty the group (anything left is moved to its parent) and remove it."""
        for _ in range(50):
            if not self.path.exists():
                return
            for pid in _read(self.path / "cgroup.procs").split():
                with contextlib.suppress(OSError):
                    (self.parent / "cgroup.procs").write_text(f"{pid}\n")
            try:
                self.path.rmdir()
                return
            except OSError:
                time.sleep(0.1)
        raise OSError(f"could not remove {self.path}; remove it by hand (rmdir)")


@contextlib.contextmanager
def quota_group(cpus: float, period_us: int = 100_000) -> Iterator[QuotaGroup]:
    """A :class:`QuotaGroup` named after this process, removed on the way out whatever happens."""
    group = QuotaGroup(f"imgbench-quota-{os.getpid()}", cpus, period_us)
    group.create()
    try:
        yield group
    finally:
        group.remove()


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""
