"""The address layout: ``run_under`` really fixes or randomises a process's layout, and says so."""

from __future__ import annotations

import functools
import subprocess
import sys
from pathlib import Path

import pytest

from imgbench.measure import layout

ROOT = Path(__file__).resolve().parents[2]

# prints the layout the process reports, then where a fresh 1 MiB buffer (an mmap) and the heap
# landed: addresses that the kernel draws anew per process unless randomisation is off
CHILD = (
    "import ctypes, sys; from imgbench.measure.layout import current, run_under; "
    "run_under(sys.argv[1]); buffer = ctypes.create_string_buffer(1 << 20); "
    "print(current(), ctypes.addressof(buffer), id(object()))"
)


def _child(wanted: str) -> tuple[str, int, int]:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, wanted],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.split()
    return out[0], int(out[1]), int(out[2])


@functools.cache
def layout_can_be_fixed() -> bool:
    """Whether this kernel lets a process turn randomisation off (a seccomp profile may not)."""
    return _child("fixed")[0] == "fixed"


def test_a_fixed_layout_puts_every_process_at_the_same_addresses() -> None:
    if not layout_can_be_fixed():
        pytest.skip("this kernel refuses personality(ADDR_NO_RANDOMIZE) (seccomp)")
    first, second = _child("fixed"), _child("fixed")
    assert first[0] == second[0] == "fixed"
    assert first[1:] == second[1:]  # the same layout, drawn by nobody


def test_a_randomized_layout_draws_new_addresses_and_says_so() -> None:
    draws = [_child("randomized") for _ in range(3)]
    assert {d[0] for d in draws} == {"randomized"}
    assert len({d[1] for d in draws}) > 1  # the kernel's draw: the buffer moves


def test_an_unknown_layout_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown address layout"):
        layout.run_under("sideways")
