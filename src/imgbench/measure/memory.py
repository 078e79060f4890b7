"""Peak resident memory of this process over one case.

Linux resets the high-water mark (VmHWM) when 5 is written to /proc/self/clear_refs, which
gives a per-case peak instead of the lifetime peak of ``getrusage``.
"""

from __future__ import annotations

import resource
from pathlib import Path

import psutil

_STATUS = Path("/proc/self/status")
_CLEAR_REFS = Path("/proc/self/clear_refs")


def reset_peak_rss() -> bool:
    """Reset the high-water mark; False where the kernel does not allow it."""
    try:
        _CLEAR_REFS.write_text("5")
        return True
    except OSError:
        return False


def peak_rss_bytes() -> int:
    """Peak RSS since the last reset (or since start, where resetting is impossible)."""
    try:
        for line in _STATUS.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return max(peak_kb * 1024, psutil.Process().memory_info().rss)
