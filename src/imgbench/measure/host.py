"""How fast the host is while a round is timed: a probe before and after it, and a quiet gate.

Measured on this 2-vCPU VM: a fixed pure-Python loop runs in one of two states, about 3.4 ms
or 5.9 ms (1.75x), switching every 0.2 to 5 s as the host's other tenants come and go; CPU time
moves with wall time, so it is a slower CPU, not stolen time, and no timer can see past it. The
same episodes slow a JPEG decode by 1.3x, a numpy flip by 1.45x and a dict-of-bytes read by 1.85x,
so a case's figure depended on which state its rounds happened to meet.

So every timed round is bracketed by a short probe (the same loop, well under a millisecond), and
the ratio of the slower probe to the fastest probe of the session says what state the host was
in. A round whose ratio is above ``max_ratio`` is timed again (up to a budget), the kept rounds'
ratios are recorded per round, and the row says how many were thrown away: the neighbours become
a recorded dimension where they cannot be removed.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

PROBE_ITERATIONS = 20_000  # about 0.6 ms of pure Python on this machine's fast state


def probe_s() -> float:
    """CPU seconds a fixed pure-Python loop takes now: the host's speed, in the interpreter's
    terms. Its own thread's CPU time, not wall time: the host's slow state slows both alike,
    while a wait for a core (the case's own workers holding both, a cgroup quota throttling the
    process tree for the rest of a period) is no slower CPU, and counted as one it made the gate
    throw away rounds the quota or the case's own threads had slowed (imgbench.measure.quota)."""
    clock = time.thread_time
    start = clock()
    total = 0
    for i in range(PROBE_ITERATIONS):
        total += i
    return clock() - start


@dataclass
class HostGate:
    """Keeps the rounds timed while the host ran at its fastest state seen this session.

    ``max_ratio`` 0 turns the gate off (every round is kept; ratios are still recorded).
    ``budget_s`` caps what a case may spend waiting for quiet and on rounds thrown away.
    """

    max_ratio: float = 1.3
    budget_s: float = 1.0
    reference_s: float = math.inf  # the fastest probe seen this session (the runner carries it)

    @property
    def enabled(self) -> bool:
        return self.max_ratio > 0

    def probe(self) -> float:
        """One probe, which also lowers the reference when it is the fastest yet."""
        seconds = probe_s()
        self.reference_s = min(self.reference_s, seconds)
        return seconds

    def ratio(self, seconds: float) -> float:
        """A probe's time over the session's fastest: 1.0 is the host at its quietest."""
        return seconds / self.reference_s if math.isfinite(self.reference_s) else 1.0

    def quiet(self, ratio: float) -> bool:
        return not self.enabled or ratio <= self.max_ratio

    def calibrate(self, duration_s: float = 0.2) -> None:
        """Probe for a while so the reference is the host's fast state, not one lucky probe."""
        end = time.perf_counter() + duration_s
        while time.perf_counter() < end:
            self.probe()

    def wait_for_quiet(self, limit_s: float) -> float:
        """Probe until the host is in its quiet state or ``limit_s`` passed; seconds waited."""
        start = time.perf_counter()
        if not self.enabled:
            return 0.0
        while time.perf_counter() - start < limit_s:
            if self.quiet(self.ratio(self.probe())):
                break
        return time.perf_counter() - start
