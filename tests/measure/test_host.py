"""The host gate: rounds the host slowed are timed again, and the row says what the host did."""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from imgbench.measure.case import Workload
from imgbench.measure.host import HostGate, probe_s
from imgbench.measure.rounds import MAX_ROUND_FACTOR, timed_rounds


class ScriptedGate(HostGate):
    """A gate whose probes return a script of seconds, then its last one (the reference is 1.0)."""

    def __init__(self, probes: list[float], **kwargs: float) -> None:
        super().__init__(reference_s=1.0, **kwargs)
        self._probes: Iterator[float] = iter(probes)
        self._last = probes[-1]

    def probe(self) -> float:
        seconds = self._last = next(self._probes, self._last)
        self.reference_s = min(self.reference_s, seconds)
        return seconds


def _counting(items: int = 2) -> Workload:
    return Workload(items=list(range(items)), fn=lambda _: None)


def test_probe_is_a_short_positive_time() -> None:
    seconds = probe_s()
    assert 0 < seconds < 0.5


def test_rounds_the_host_slowed_are_timed_again_and_dropped() -> None:
    # wait probe quiet; then (before, after) per round: round 2 is slow after, round 3 before
    probes = [1.0] + [1.0, 1.0, 1.0, 2.0, 1.9, 1.0] + [1.0] * 20
    gate = ScriptedGate(probes, max_ratio=1.3, budget_s=5.0)
    timed = timed_rounds(_counting(), 3, gate)
    assert len(timed.samples_s) == 3
    assert timed.discarded == 2
    assert all(r <= 1.3 for r in timed.host_ratios)
    assert len(timed.latencies_s) == 3 * 2  # the dropped rounds' latencies are dropped too


class NeverQuiet(ScriptedGate):
    """Waiting finds no quiet probe: it spends the whole limit, and no scripted probe (a real
    wait probes as often as the CPU allows, which made the rounds' ratios the machine's)."""

    def wait_for_quiet(self, limit_s: float) -> float:
        return limit_s


def test_when_the_host_never_quiets_the_least_slowed_rounds_are_kept() -> None:
    slow = [2.0, 1.6, 1.8, 1.5] * 100  # rounds of ratio 2.0, 1.8, 2.0, 1.8, ...
    gate = NeverQuiet(slow, max_ratio=1.3, budget_s=0.2)
    timed = timed_rounds(_counting(), 2, gate)
    assert 1 <= timed.discarded <= 2 * MAX_ROUND_FACTOR - 2  # the attempt cap holds
    assert timed.waited_s >= 0.2 * 0.9  # it spent its budget waiting for quiet, then gave up
    assert len(timed.host_ratios) == 2 and min(timed.host_ratios) > 1.3
    assert max(timed.host_ratios) <= 1.8  # the two least-slowed rounds, not the first two


def test_while_the_host_is_slow_it_probes_until_quiet_instead_of_timing_rounds() -> None:
    # wait probe quiet; round 1 quiet; round 2 slow after; three slow probes, a quiet one; round 3
    probes = [1.0] + [1.0, 1.0, 1.0, 2.0] + [2.0, 2.0, 2.0, 1.0] + [1.0] * 20
    gate = ScriptedGate(probes, max_ratio=1.3, budget_s=5.0)
    calls: list[int] = []
    timed = timed_rounds(Workload(items=[0, 1], fn=calls.append), 2, gate)
    assert len(calls) == 3 * 2  # three rounds timed: the slow spell cost probes, not rounds
    assert timed.discarded == 1 and all(r <= 1.3 for r in timed.host_ratios)


def test_a_disabled_gate_keeps_every_round_and_records_ratios() -> None:
    gate = ScriptedGate([2.0] * 40, max_ratio=0.0)
    timed = timed_rounds(_counting(), 4, gate)
    assert timed.discarded == 0 and timed.waited_s == 0.0
    assert len(timed.host_ratios) == 4


@pytest.mark.parametrize("ratio,quiet", [(1.0, True), (1.29, True), (1.31, False)])
def test_quiet_is_the_ratio_against_the_gate(ratio: float, quiet: bool) -> None:
    assert HostGate(max_ratio=1.3).quiet(ratio) is quiet


def _producer_workload(runs_ahead: bool) -> tuple[Workload, list[int], Callable[[], None]]:
    """A real producer thread filling a bounded queue (a loader's workers, in miniature); each
    round's first item records how many items were waiting when the round began."""
    made: queue.Queue[int] = queue.Queue(maxsize=8)
    stop = threading.Event()

    def produce() -> None:
        while not stop.is_set():
            with contextlib.suppress(queue.Full):
                made.put(1, timeout=0.01)
            time.sleep(0.005)

    thread = threading.Thread(target=produce, daemon=True)
    thread.start()
    waiting: list[int] = []

    def take(item: int) -> None:
        if item == 0:
            waiting.append(made.qsize())
        made.get(timeout=5)

    def close() -> None:
        stop.set()
        thread.join()

    workload = Workload(items=list(range(4)), fn=take, runs_ahead=runs_ahead)
    return workload, waiting, close


@pytest.mark.parametrize("runs_ahead", [False, True])
def test_a_workload_that_runs_ahead_is_never_paused_between_rounds(runs_ahead: bool) -> None:
    """A pause for the host lets a loader's workers fill their queue, and the next round times
    batches made during the pause (a 1-worker DataLoader read 318 images/s with rounds of up to
    4,800). The gate may still re-time slow rounds, back to back."""
    workload, waiting, close = _producer_workload(runs_ahead)
    gate = ScriptedGate([2.0], max_ratio=1.3, budget_s=0.4)  # never quiet: it would wait
    try:
        rounds = timed_rounds(workload, 3, gate)
    finally:
        close()
    if runs_ahead:
        assert rounds.waited_s == 0.0
        assert max(waiting) < 8  # the queue never filled while the timer was stopped
    else:
        assert rounds.waited_s > 0.1
        assert max(waiting) == 8  # what the pauses let it make ahead
