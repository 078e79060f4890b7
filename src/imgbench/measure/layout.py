"""The address-space layout a measuring process runs with: fixed, not drawn anew per session.

Measured on this VM (docs/measuring.md, "The address-space layout"): Pillow's decode of the quick
set, alone, in 14 sessions read 815-1,289 images/s with the kernel's address-space layout
randomisation (ASLR) on, in two clusters near 1,000 and 1,270, and 1,219-1,284 with it off for the
measuring processes. Where the heap, the libraries and the stack land decides which buffers
conflict in the caches and the TLB, and every process draws a new layout. pyperf averages that
draw over 20 fresh processes; imgbench forks every case from one server, so all of a session's
cases share the server's draw, and a figure moved with it from session to session.

So the worker server runs with randomisation off (``personality(ADDR_NO_RANDOMIZE)``, what
``setarch -R`` and gdb do; the flag lives across ``execve`` and every fork inherits it): each
session draws the same layout. The setting is a recorded dimension (``address_layout`` in the
row), and ``randomized`` keeps the kernel's default for whoever wants the average over layouts.
Where the kernel refuses the call (a seccomp profile, as Docker's default, allows only a few
personalities), the server runs as it is and the row says ``randomized``.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys
from pathlib import Path
from typing import Literal

Layout = Literal["fixed", "randomized"]
LAYOUTS: tuple[Layout, ...] = ("fixed", "randomized")
ADDR_NO_RANDOMIZE = 0x0040000  # <linux/personality.h>
_QUERY = 0xFFFFFFFF  # personality(0xffffffff) returns the current persona, changing nothing
LAYOUT_ENV = "IMGBENCH_ADDRESS_LAYOUT"  # the layout the worker server is asked to run with
_REEXEC_ENV = "IMGBENCH_ADDRESS_LAYOUT_REEXEC"  # set across the re-exec: never loop


def _personality(persona: int) -> int:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        result: int = libc.personality(ctypes.c_ulong(persona))
    except (OSError, AttributeError):
        return -1
    return result


def _system_wide_fixed() -> bool:
    with contextlib.suppress(OSError):
        return Path("/proc/sys/kernel/randomize_va_space").read_text().strip() == "0"
    return False


def current() -> Layout:
    """The layout this process runs with: fixed when randomisation is off, for it or system-wide."""
    if _system_wide_fixed():
        return "fixed"
    persona = _personality(_QUERY)
    return "fixed" if persona != -1 and persona & ADDR_NO_RANDOMIZE else "randomized"


def run_under(layout: str) -> None:
    """Make this process run under ``layout``: set or clear the flag and exec this same command
    line again, since the kernel applies a layout only at ``execve``. Call it first thing, before
    anything worth keeping is loaded. Does nothing when the layout already holds, when the kernel
    refuses the change, or on the second pass."""
    if layout not in LAYOUTS:
        raise ValueError(f"unknown address layout {layout!r}; known: {list(LAYOUTS)}")
    second_pass = os.environ.pop(_REEXEC_ENV, None) is not None
    if second_pass or _system_wide_fixed():  # fixed for every process: nothing to set or clear
        return
    persona = _personality(_QUERY)
    wanted = persona | ADDR_NO_RANDOMIZE if layout == "fixed" else persona & ~ADDR_NO_RANDOMIZE
    if persona == -1 or wanted == persona:
        return
    if _personality(wanted) == -1 or _personality(_QUERY) != wanted:
        return
    os.environ[_REEXEC_ENV] = "1"
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(sys.executable, sys.orig_argv)
