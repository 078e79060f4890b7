"""A test-only knob that makes chosen cases do more real work, to measure a gate's error rates.

``IMGBENCH_TEST_EXTRA_WORK="read/pillow/*=0.10"`` (glob on the case id, ``=`` the fraction; several
separated by ``;``) makes every matching case call its function once more after every
1/fraction items (credit accumulates per call), so 10% more of the same work is done: the decode,
transform or read itself, not a sleep. The row's ``extra_json`` says ``injected_extra_work``, so a
figure measured with the knob can never pass for a real one.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Callable
from typing import Any

EXTRA_WORK_ENV = "IMGBENCH_TEST_EXTRA_WORK"
# The same setting baked into a commit: how the gate's error rates are measured across two real
# commits with `imgbench ci` (lab/gate_error_rates.py); the environment variable wins.
BUILTIN = ""


def extra_work_for(case_id: str, setting: str | None = None) -> float:
    """The injected fraction for this case (0.0 when the knob is unset or does not match)."""
    text = os.environ.get(EXTRA_WORK_ENV, BUILTIN) if setting is None else setting
    for part in filter(None, (p.strip() for p in text.split(";"))):
        pattern, _, value = part.rpartition("=")
        if not pattern:
            raise ValueError(f"{EXTRA_WORK_ENV}: expected PATTERN=FRACTION, got {part!r}")
        if fnmatch.fnmatchcase(case_id, pattern):
            return float(value)
    return 0.0


def with_extra_work(fn: Callable[[Any], Any], fraction: float) -> Callable[[Any], Any]:
    """``fn``, calling itself once more each time the accumulated fraction reaches one call."""
    credit = 0.0

    def heavier(item: Any) -> Any:
        nonlocal credit
        result = fn(item)
        credit += fraction
        while credit >= 1.0:
            credit -= 1.0
            fn(item)
        return result

    return heavier
