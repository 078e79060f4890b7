"""Calibrated rounds: a round repeats its items until it lasts the profile's minimum."""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from imgbench.measure.cache import CacheControl
from imgbench.measure.case import Case, Workload
from imgbench.measure.host import HostGate
from imgbench.measure.rounds import (
    MAX_CASE_ROUNDS,
    MAX_REPEATS,
    Measurement,
    calibrate,
    round_repeats,
    run_case,
    timed_rounds,
)
from imgbench.measure.settings import Settings
from tests.measure.conftest import Engine

ROOT = Path(__file__).resolve().parents[2]


def test_round_repeats() -> None:
    assert round_repeats(0.001, 0.02) == 20
    assert round_repeats(0.0015, 0.02) == 14  # whole passes, rounded up
    assert round_repeats(0.05, 0.02) == 1
    assert round_repeats(0.001, 0.0) == 1  # calibration off
    assert round_repeats(0.0, 0.02) == MAX_REPEATS


def _sleepy(items: int) -> Workload:
    return Workload(
        items=list(range(items)),
        fn=lambda _: time.sleep(0.001),
        bytes_per_round=10 * items,
        megapixels_per_round=0.5 * items,
    )


def test_calibrate_repeats_whole_passes_and_scales_the_work() -> None:
    workload = _sleepy(2)
    repeats = calibrate(workload, [0.002], 0.02)
    assert repeats == 10
    assert workload.items == [0, 1] * 10 and workload.images_per_round == 20
    assert workload.bytes_per_round == 200 and workload.megapixels_per_round == 10.0


def test_calibrate_times_a_pass_when_there_was_no_warm_up() -> None:
    workload = _sleepy(2)
    repeats = calibrate(workload, [], 0.02)
    assert 2 <= repeats <= 10  # each pass sleeps >= 2 ms
    assert len(workload.items) == 2 * repeats


def test_cold_and_self_timed_rounds_stay_one_pass(tmp_path: Path) -> None:
    cold = _sleepy(2)
    cold.cache = CacheControl("cold", [tmp_path])
    assert calibrate(cold, [0.001], 0.02) == 1 and len(cold.items) == 2
    tool = _sleepy(2)
    tool.self_timed = True
    assert calibrate(tool, [0.001], 0.02) == 1
    opted_out = _sleepy(2)
    opted_out.calibrate = False
    assert calibrate(opted_out, [0.001], 0.02) == 1


def test_rows_record_the_calibration(engine: Engine) -> None:
    """A microsecond read repeats its items; the row's images per round counts every pass."""

    def keep(case: Case) -> bool:
        return case.library == "raw-file" or (
            case.library == "lmdb" and case.params["mode"] == "read"
        )

    # measured in this process: calibration is the rounds' (worker path: test_worker.py)
    outcomes = {
        c.library: o
        for c, o in engine("format", keep, min_round_s=0.03, process_model="in-process")
    }
    raw, lmdb = outcomes["raw-file"], outcomes["lmdb"]
    assert isinstance(raw, Measurement) and isinstance(lmdb, Measurement), outcomes
    assert raw.metrics()["min_round_s"] == 0.03
    assert raw.round_repeats > 1  # sixteen page-cache reads take microseconds
    assert raw.images_per_round == 10 * raw.round_repeats  # 10 files x passes
    assert lmdb.images_per_round == 10 * lmdb.round_repeats


def test_calibration_is_confirmed_when_the_first_pass_was_slow() -> None:
    """A first pass far slower than the rest (a file's first read) must not leave rounds short."""
    calls = {"n": 0}

    def first_slow(_: object) -> None:
        calls["n"] += 1
        time.sleep(0.01 if calls["n"] <= 2 else 0.0005)

    workload = Workload(items=[0, 1], fn=first_slow, bytes_per_round=2, megapixels_per_round=1.0)
    warm_start = time.perf_counter()
    for item in workload.items:  # the warm-up pass: 20 ms, as if one pass were enough
        first_slow(item)
    repeats = calibrate(workload, [time.perf_counter() - warm_start], 0.02)
    assert repeats > 1
    start = time.perf_counter()
    for item in workload.items:
        first_slow(item)
    assert time.perf_counter() - start >= 0.02 * 0.9


def test_timed_rounds_last_the_case_minimum() -> None:
    workload = _sleepy(5)  # a round sleeps >= 5 ms
    timed = timed_rounds(workload, 3, HostGate(max_ratio=0), min_case_s=0.1)
    assert len(timed.samples_s) > 3 and sum(timed.samples_s) >= 0.1 * 0.9
    assert len(timed.samples_s) <= 20  # no more than 0.1 s worth
    short = timed_rounds(_sleepy(5), 3, HostGate(max_ratio=0), min_case_s=0.0)
    assert len(short.samples_s) == 3
    capped = timed_rounds(_sleepy(1), 3, HostGate(max_ratio=0), min_case_s=60.0)
    assert len(capped.samples_s) == MAX_CASE_ROUNDS  # 200 rounds of ~1 ms, not a minute


def test_a_host_that_stays_slow_cannot_hold_the_case() -> None:
    """Extra rounds timed while the host is slow are thrown away, within a bounded time."""
    gate = HostGate(max_ratio=1.3, budget_s=0.2)
    gate.reference_s = 1e-9  # every probe now reads as a host far slower than its fastest
    begin = time.perf_counter()
    timed = timed_rounds(_sleepy(5), 3, gate, min_case_s=0.3)
    assert time.perf_counter() - begin < 0.2 + 2 * 0.3 + 0.5  # budget + 2 x min_case_s + slack
    assert len(timed.samples_s) == 3 and timed.discarded >= 1


def test_rows_record_the_case_minimum(engine: Engine) -> None:
    """Rounds add up to the case minimum; the row records it and every round's sample."""

    def keep(case: Case) -> bool:
        return case.library == "raw-file" and case.params["mode"] == "read"

    ((_, outcome),) = engine(
        "format",
        keep,
        min_round_s=0.02,
        min_case_s=0.3,
        rounds=3,
        host_max_ratio=0,  # every round kept: the count is the minimum's, not the host's
        process_model="in-process",  # the rounds' rule, whatever the process (test_worker.py)
    )
    assert isinstance(outcome, Measurement), outcome
    row = outcome.metrics()
    assert row["min_case_s"] == 0.3
    assert row["rounds"] == len(row["samples_s"]) > 3  # three 20 ms rounds were not 0.3 s
    assert sum(row["samples_s"]) >= 0.3 * 0.9


class _Bursts:
    """Eight items at once, then a 40 ms wait for the next eight (as Ray Data hands over batches)."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, _item: object) -> None:
        self.calls += 1
        if self.calls % 8 == 0:
            time.sleep(0.04)


def test_a_bursty_workload_warms_up_and_times_rounds_across_several_bursts() -> None:
    bursts = _Bursts()

    def prepare(_ctx: object, _case: object) -> Workload:
        # a pass of 4 items is a burst (microseconds) or holds a gap (40 ms): sized from its
        # fastest pass, a round would be thousands of passes; from one pass, one burst or gap
        return Workload(items=list(range(4)), fn=bursts, min_round_s=0.3)

    case = Case(stage="loader", library="toy", variant="bursts", prepare=prepare)  # type: ignore[arg-type]
    # the parts of a CaseContext run_case uses (the workload draws no sample; a loader row
    # names the disk under the dataset's root)
    ctx = SimpleNamespace(
        settings=Settings(rounds=3, warmup_rounds=1, min_round_s=0.02),
        drawn={},
        sample_columns=dict,
        sample_notes=list,
        dataset=SimpleNamespace(manifest=SimpleNamespace(root=str(ROOT))),
        has_scratch=lambda: False,
    )
    m = run_case(case, ctx, HostGate())  # type: ignore[arg-type]
    assert m.min_round_s == 0.3  # the workload's floor, above the profile's
    # warm-up of >= 0.3 s: ~15 passes, one gap every other pass, so ~20 ms a pass on average
    assert 10 <= m.round_repeats <= 30, m.round_repeats
    assert all(s >= 0.25 for s in m.samples_s), m.samples_s
    per_item = np.median(m.samples_s) / (4 * m.round_repeats)
    assert 0.004 <= per_item <= 0.0065  # 40 ms per 8 items, not a burst's nor a gap's rate
