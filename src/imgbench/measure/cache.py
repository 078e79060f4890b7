"""Page-cache control for cold reads: evict files, then prove it by asking the kernel.

Eviction uses ``posix_fadvise(POSIX_FADV_DONTNEED)`` after an ``fsync`` (dirty pages cannot be
dropped). It is checked with ``mincore(2)`` on a read-only mapping of each file: the fraction of
the file's pages still resident. On tmpfs, or where the kernel keeps the pages anyway, the check
fails and callers must report that a cold figure is impossible instead of printing one.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import mmap
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [
    ctypes.c_void_p,
    ctypes.c_size_t,
    ctypes.c_int,
    ctypes.c_int,
    ctypes.c_int,
    ctypes.c_long,
]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_ubyte)]
_PAGE = mmap.PAGESIZE
_MAP_FAILED = ctypes.c_void_p(-1).value

# A cold round is accepted when at most this fraction of the bytes stayed resident.
MAX_RESIDENT_AFTER_EVICT = 0.02


def resident_pages(path: Path) -> tuple[int, int]:
    """(resident pages, total pages) of one file, from mincore."""
    size = path.stat().st_size
    if size == 0:
        return 0, 0
    pages = (size + _PAGE - 1) // _PAGE
    fd = os.open(path, os.O_RDONLY)
    try:
        addr = _libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        if addr in (None, _MAP_FAILED):
            raise OSError(ctypes.get_errno(), f"mmap failed for {path}")
        try:
            vec = (ctypes.c_ubyte * pages)()
            if _libc.mincore(addr, size, vec) != 0:
                raise OSError(ctypes.get_errno(), f"mincore failed for {path}")
            return sum(b & 1 for b in vec), pages
        finally:
            _libc.munmap(addr, size)
    finally:
        os.close(fd)


def resident_fraction(paths: Iterable[Path]) -> float:
    """Fraction of all pages of ``paths`` that are in the page cache."""
    resident = total = 0
    for path in paths:
        r, t = resident_pages(Path(path))
        resident += r
        total += t
    return resident / total if total else 0.0


SETTLE_S = 5.0  # the longest a cold round waits for the device's reads in flight to finish


def _block_device(path: Path) -> str | None:
    """The name /proc/diskstats gives the block device holding ``path`` (None: not one)."""
    dev = Path(path).stat().st_dev
    link = Path(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}")
    return link.resolve().name if link.exists() else None


def _in_flight(device: str) -> int | None:
    try:
        lines = Path("/proc/diskstats").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        parts = line.split()
        if len(parts) >= 12 and parts[2] == device:
            return int(parts[11])
    return None


def reads_in_flight(path: Path) -> int | None:
    """I/Os in progress on the block device holding ``path`` (``/proc/diskstats``), or None when
    the kernel does not say (no such device, not Linux)."""
    device = _block_device(path)
    return _in_flight(device) if device else None


def settle(path: Path, limit_s: float = SETTLE_S) -> float:
    """Wait until the device holding ``path`` has no I/O in flight: a read-ahead a reader started
    in the last round, still queued on a slow (or throttled) disk, would otherwise land in the
    page cache after the eviction and warm the next round. Returns the seconds waited."""
    start = time.perf_counter()
    device = _block_device(path)  # found once; its counter is polled
    while device and time.perf_counter() - start < limit_s and _in_flight(device):
        time.sleep(0.005)
    return time.perf_counter() - start


def evict(paths: Iterable[Path]) -> None:
    """Ask the kernel to drop the cached pages of every file."""
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


@dataclass(frozen=True)
class EvictionCheck:
    ok: bool
    resident_after: float  # fraction of pages still cached after evicting
    method: str  # what goes into the row's cache_method column


def evict_and_check(paths: list[Path]) -> EvictionCheck:
    """Evict, then measure residency; ``ok`` is False when the files stayed cached (e.g. tmpfs)."""
    evict(paths)
    after = resident_fraction(paths)
    ok = after <= MAX_RESIDENT_AFTER_EVICT
    method = (
        f"posix_fadvise(DONTNEED) before every round; mincore residency after evict {after:.1%}"
        if ok
        else f"eviction failed: {after:.0%} of pages stayed resident (tmpfs or pinned pages)"
    )
    return EvictionCheck(ok=ok, resident_after=after, method=method)


def warm(paths: Iterable[Path]) -> None:
    """Read every file once so the page cache holds it."""
    for path in paths:
        with Path(path).open("rb") as handle:
            while handle.read(1 << 20):
                pass


class CacheControl:
    """The page-cache state a case's rounds start from, made before every round and checked.

    ``warm``: every file is read before the first round (and before each round when
    ``rewarm``). ``cold``: before every round the files are evicted and the eviction is checked
    with mincore; ``reopen`` (close, then open) runs around the eviction so that a reader's own
    buffers or maps do not keep the data. Where cold is impossible (tmpfs), :meth:`start` says why,
    and the case is skipped rather than reporting a warm figure as cold.
    """

    def __init__(
        self,
        state: str,
        files: list[Path],
        *,
        rewarm: bool = True,
        reopen: tuple[Callable[[], None], Callable[[], None]] | None = None,
    ) -> None:
        if state not in ("warm", "cold"):
            raise ValueError(f"cache state must be warm or cold, not {state!r}")
        self.state, self.files, self.rewarm, self.reopen = state, files, rewarm, reopen
        self.worst_resident = 0.0  # the largest fraction left resident by an eviction
        self.method = ""

    def start(self) -> str | None:
        """Make the first round's state; the reason it cannot be made here, or None."""
        if self.state == "warm":
            warm(self.files)
            when = "before each round" if self.rewarm else "once before timing"
            self.method = (
                f"warm: every file read {when}; mincore residency after warming "
                f"{resident_fraction(self.files):.0%}"
            )
            return None
        check = evict_and_check(self.files)
        self.worst_resident = check.resident_after
        self.method = check.method
        if self.reopen is not None:
            self.method += "; reader closed and reopened (untimed) before every round"
        return None if check.ok else f"cold cache impossible here: {check.method}"

    def before_round(self) -> None:
        """Untimed, before every round: warm again, or close, evict, check and reopen."""
        if self.state == "warm":
            if self.rewarm:
                warm(self.files)
            return
        if self.reopen is not None:
            self.reopen[0]()
        if self.files:
            settle(self.files[0])
        check = evict_and_check(self.files)
        self.worst_resident = max(self.worst_resident, check.resident_after)
        if not check.ok:
            raise RuntimeError(f"cold round not cold: {check.method}")
        if self.reopen is not None:
            self.reopen[1]()

    def extra(self) -> dict[str, float]:
        """What the row records about the cache state it measured."""
        if self.state == "warm":
            return {}
        return {"resident_after_evict_max": round(self.worst_resident, 4)}
