"""The worker server settles glibc's dynamic thresholds, whatever its imports left."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from imgbench.measure.allocator import GLIBC_TUNED

PROBE = """
import ctypes, sys
from imgbench.measure.allocator import settle_glibc
settled = settle_glibc() if sys.argv[1] == "settle" else False
libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
block = libc.malloc(8 * 1024 * 1024)
heap = [line.split()[0] for line in open("/proc/self/maps") if line.rstrip().endswith("[heap]")]
inside = any(int(a, 16) <= block < int(b, 16) for a, b in (h.split("-") for h in heap))
libc.free(block)
print(settled, inside)
"""


def _run(mode: str, env: dict[str, str]) -> str:
    return subprocess.run(
        [sys.executable, "-c", PROBE, mode],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.strip()


def _clean_env() -> dict[str, str]:
    return {
        k: v for k, v in os.environ.items() if not k.startswith("MALLOC_") and k != "LD_PRELOAD"
    }


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc and /proc/self/maps")
def test_a_settled_process_serves_large_blocks_from_its_heap() -> None:
    # fresh: an 8 MiB block is above glibc's 128 KiB starting threshold, so it is mmapped
    assert _run("fresh", _clean_env()) == "False False"
    # settled: the threshold is near 32 MiB, so the block comes from the heap (no fresh pages
    # faulted in for each large buffer, as in a long-running process)
    assert _run("settle", _clean_env()) == "True True"


def test_tuned_glibc_is_left_alone() -> None:
    assert _run("settle", {**_clean_env(), **GLIBC_TUNED}).startswith("False")


def test_fork_states_script_reports_every_child(tiny_dataset: Path) -> None:
    """lab/fork_states.py: two children per import set, unsettled and settled."""
    script = Path(__file__).resolve().parents[2] / "lab" / "fork_states.py"
    out = subprocess.run(
        [sys.executable, str(script), "--folder", str(tiny_dataset), "--imports", "", "json"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    lines = [line for line in out.stdout.splitlines() if "img/s" in line]
    assert len(lines) == 2 * 2 * 2  # (as left, settled) x 2 import sets x 2 children
    assert all("faults/img" in line and "mod 4096" in line for line in lines)
