"""Timing one case through pytest-benchmark, and turning its samples into metrics.

Each timed round applies the workload's function to every item; the round time gives images/s
(images per round / seconds), so throughput is per image, not pytest-benchmark's calls per
second. Per-image latencies are taken inside the round with ``perf_counter``.

Rounds are calibrated, as pyperf calibrates loops and pytest-benchmark uses ``min_time``: after
the warm-up, a round that would last less than ``min_round_s`` repeats the items (whole passes)
until it does, so a round of sixteen 2-microsecond reads times the library, not the clock's and
the scheduler's grain. ``round_repeats`` in the row says how many passes a round made.

A case can also time rounds until they add up to ``min_case_s`` (pytest-benchmark's
``max_time``; off unless a profile or ``--imgbench-min-case-ms`` sets it): this host's speed
changes every 0.2-5 s, so five 20 ms rounds saw one state and the next session another. Measured
alone, 8-10 sessions: Parquet's byte read moved 7.5% (CV) with five 20 ms rounds and 4.1% with
1 s of them, a 2-worker DataLoader 6.2% and 2.3%. Cold-cache rounds keep the profile's count.

Every timed round is bracketed by host probes (:mod:`imgbench.measure.host`); rounds the host's
other tenants slowed are timed again, so both process models time rounds the same way and hand
the kept ones to pytest-benchmark's table and JSON.
"""

from __future__ import annotations

import math
import resource
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from imgbench.measure.case import Case, Workload
from imgbench.measure.context import CaseContext
from imgbench.measure.host import HostGate
from imgbench.measure.instructions import Counts, count_pass
from imgbench.measure.knob import extra_work_for, with_extra_work
from imgbench.measure.memory import peak_rss_bytes, reset_peak_rss
from imgbench.measure.quota import MIN_WAIT_SHARE, WARM_PERIODS, CpuQuota, Throttling, cpu_quota
from imgbench.measure.seeds import seed_everything
from imgbench.measure.settings import Settings
from imgbench.measure.storage import IoMeter, storage_facts
from imgbench.measure.threads import ThreadSettings, current_settings, thread_limits


@dataclass
class Measurement:
    """What one measured case produced; the plugin turns it into a row."""

    samples_s: list[float]
    latencies_s: np.ndarray
    images_per_round: int
    bytes_per_round: int
    megapixels_per_round: float
    rounds: int
    warmup_rounds: int
    threads: ThreadSettings
    peak_rss_bytes: int
    cache_method: str | None
    extra: dict[str, Any] = field(default_factory=dict)
    timer: str = "perf_counter"
    library_version: str | None = None
    round_repeats: int = 1  # passes over the items per timed round (calibration)
    min_round_s: float = 0.0
    min_case_s: float = 0.0  # timed rounds add up to at least this (more rounds than asked)
    # page faults of the measuring process during the timed rounds, per image: the allocator
    # returning memory to the kernel shows up here (fresh pages are faulted in again)
    page_faults_minor_per_image: float | None = None
    page_faults_major_per_image: float | None = None
    process_model: str = "in-process"
    allocator: str | None = None
    address_layout: str | None = None  # fixed | randomized (imgbench.measure.layout)
    worker_imports: str | None = None  # profile | selected (imgbench.measure.server)
    # one figure per worker process when a case is measured in several (``pool``): images/s of
    # that process's median round; empty for one process
    process_images_per_s: list[float] = field(default_factory=list)
    # the host's state during each kept round (imgbench.measure.host): 1.0 = its quietest
    host_ratios: list[float] = field(default_factory=list)
    host_rounds_discarded: int = 0
    host_wait_s: float = 0.0
    host_reference_s: float = math.inf
    host_max_ratio: float = 0.0
    # "wall" (timed rounds) or "instructions" (one pass counted under callgrind; no timed rounds)
    measure: str = "wall"
    instructions_per_image: float | None = None
    estimated_cycles_per_image: float | None = None
    # row columns from the handles of the services the case used (e.g. the S3 endpoint)
    columns: dict[str, Any] = field(default_factory=dict)

    def metrics(self) -> dict[str, Any]:
        row: dict[str, Any] = {
            "measure": self.measure,
            "instructions_per_image": self.instructions_per_image,
            "estimated_cycles_per_image": self.estimated_cycles_per_image,
            "samples_s": [float(s) for s in self.samples_s],
            "images_per_round": self.images_per_round,
            "bytes_per_round": self.bytes_per_round,
            "megapixels_per_round": self.megapixels_per_round,
            "rounds": self.rounds,
            "iterations": 1,
            "warmup_rounds": self.warmup_rounds,
            "peak_rss_bytes": self.peak_rss_bytes,
            "cache_method": self.cache_method,
            "process_model": self.process_model,
            "allocator": self.allocator,
            "address_layout": self.address_layout,
            "worker_imports": self.worker_imports,
            "processes": max(1, len(self.process_images_per_s)),
            "process_images_per_s": [float(v) for v in self.process_images_per_s] or None,
        }
        if not self.samples_s:  # an instruction count: no timed rounds, no throughput
            return row
        samples = np.asarray(self.samples_s, dtype=float)
        median, q1, q3 = (float(np.percentile(samples, p)) for p in (50, 25, 75))
        lat_ms = self.latencies_s * 1e3
        return {
            **row,
            "images_per_s_median": self.images_per_round / median,
            # the slow quartile of times is the low quartile of throughput
            "images_per_s_q1": self.images_per_round / q3,
            "images_per_s_q3": self.images_per_round / q1,
            "mb_per_s_median": self.bytes_per_round / 1e6 / median
            if self.bytes_per_round
            else None,
            "megapixels_per_s_median": (
                self.megapixels_per_round / median if self.megapixels_per_round else None
            ),
            "latency_ms_median": float(np.percentile(lat_ms, 50)) if lat_ms.size else None,
            "latency_ms_p90": float(np.percentile(lat_ms, 90)) if lat_ms.size else None,
            "latency_ms_p99": float(np.percentile(lat_ms, 99)) if lat_ms.size else None,
            "round_repeats": self.round_repeats,
            "min_round_s": self.min_round_s,
            "min_case_s": self.min_case_s,
            "page_faults_minor_per_image": self.page_faults_minor_per_image,
            "page_faults_major_per_image": self.page_faults_major_per_image,
            "host_ratios": [float(r) for r in self.host_ratios],
            "host_ratio_median": float(np.median(self.host_ratios)) if self.host_ratios else None,
            "host_rounds_discarded": self.host_rounds_discarded,
            "host_wait_s": self.host_wait_s,
            "host_probe_reference_s": (
                self.host_reference_s if math.isfinite(self.host_reference_s) else None
            ),
            "host_max_ratio": self.host_max_ratio,
        }


def _timed_round(workload: Workload, latencies: list[float]) -> None:
    fn = workload.fn
    clock = time.perf_counter
    for item in workload.items:
        start = clock()
        fn(item)
        latencies.append(clock() - start)


MAX_REPEATS = 10_000  # a calibrated round never repeats its items more often than this


def round_repeats(pass_s: float, min_round_s: float) -> int:
    """Whole passes over the items a round needs to last at least ``min_round_s``."""
    if min_round_s <= 0:
        return 1
    if pass_s <= 0:
        return MAX_REPEATS
    return max(1, min(MAX_REPEATS, math.ceil(min_round_s / pass_s)))


MAX_BURSTY_WARM_PASSES = 64  # a bursty workload's warm-up stops here even if still short
CONFIRM_ROUNDS = 3  # calibration rounds that may raise the repeats before timing starts


def repeat_items(workload: Workload, repeats: int) -> int:
    """Make one round ``repeats`` passes over the workload's items; returns ``repeats``."""
    workload.items = list(workload.items) * repeats
    workload.bytes_per_round *= repeats
    workload.megapixels_per_round *= repeats
    return repeats


def calibrate(workload: Workload, warm_pass_s: list[float], min_round_s: float) -> int:
    """Repeat the workload's items so one round lasts ``min_round_s``; returns the repeats.

    ``warm_pass_s`` are the durations of the untimed passes just run. A first pass is often much
    slower than later ones (a Parquet file's first read took 6x its next), so the repeats are
    then confirmed, as pyperf does: an untimed calibrated round that still falls short of the
    minimum raises them, up to ``CONFIRM_ROUNDS`` times. A workload with its own floor
    (``Workload.min_round_s``, a bursty loader) is sized from its mean warm pass instead: its
    fastest pass is a burst.
    """
    if (
        not workload.calibrate
        or workload.self_timed
        or (workload.cache is not None and workload.cache.state == "cold")
        or min_round_s <= 0
    ):
        return 1
    items = list(workload.items)
    if not warm_pass_s:
        pass_s = _untimed_round(workload)
    elif workload.min_round_s > 0:  # bursty: the mean of a warm-up spanning several bursts
        pass_s = sum(warm_pass_s) / len(warm_pass_s)
    else:
        pass_s = min(warm_pass_s)
    repeats = round_repeats(pass_s, min_round_s)
    for _ in range(CONFIRM_ROUNDS):
        workload.items = items * repeats
        round_s = _untimed_round(workload)
        if round_s >= min_round_s or repeats >= MAX_REPEATS:
            break
        repeats = min(MAX_REPEATS, max(repeats + 1, math.ceil(repeats * min_round_s / round_s)))
    workload.items = items
    return repeat_items(workload, repeats)


def _untimed_round(workload: Workload) -> float:
    """Seconds one round of the workload's items takes now (for calibration; not a sample)."""
    if workload.before_round is not None:
        workload.before_round()
    start = time.perf_counter()
    _timed_round(workload, [])
    return time.perf_counter() - start


@dataclass
class Rounds:
    """The kept timed rounds of a case, and what the host was doing while they ran."""

    samples_s: list[float]
    latencies_s: list[float]
    host_ratios: list[float]  # per kept round: the slower bracketing probe over the fastest
    discarded: int  # rounds timed while the host was slower than the gate, then thrown away
    waited_s: float  # time spent waiting for the host's quiet state before the first round


MAX_ROUND_FACTOR = 4  # a case never times more than this many times its rounds
MAX_CASE_ROUNDS = 200  # min_case_s never keeps more rounds than this


def _one_round(
    workload: Workload, gate: HostGate, meter: IoMeter | None = None
) -> tuple[float, list[float], float]:
    """One timed round bracketed by host probes: (seconds, per-item latencies, host ratio);
    ``meter`` brackets the timed part with the disk's counters."""
    if workload.before_round is not None:
        workload.before_round()
    before = gate.probe()
    with meter or IoMeter(None):
        if workload.self_timed:  # a tool that times itself: its durations are the samples
            latencies = [float(workload.fn(item)) for item in workload.items]
            seconds = sum(latencies)
        else:
            latencies = []
            start = time.perf_counter()
            _timed_round(workload, latencies)
            seconds = time.perf_counter() - start
    after = gate.probe()
    return seconds, latencies, gate.ratio(max(before, after))


def timed_rounds(
    workload: Workload,
    rounds: int,
    gate: HostGate,
    min_case_s: float = 0.0,
    meter: IoMeter | None = None,
) -> Rounds:
    """Time ``rounds`` rounds, re-timing those the host slowed (imgbench.measure.host), then
    more quiet ones until the kept rounds add up to ``min_case_s``.

    Rounds run while the host was quiet are kept in time order; when the budget runs out first,
    the least-slowed of the others fill up, and their ratios say so in the row.
    """
    # a loader's workers keep producing while the gate waits: no waits for them (their slow
    # rounds are still re-timed, back to back)
    pause = not workload.runs_ahead
    waited = gate.wait_for_quiet(gate.budget_s / 2) if pause else 0.0
    timed: list[tuple[float, list[float], float]] = []
    quiet = 0
    deadline = math.inf
    while quiet < rounds:
        if len(timed) >= rounds:
            if not gate.enabled or len(timed) >= rounds * MAX_ROUND_FACTOR:
                break
            if deadline == math.inf:
                deadline = time.perf_counter() + gate.budget_s / 2
            elif time.perf_counter() > deadline:
                break
            if pause and not gate.quiet(timed[-1][2]):  # still slow: probe until it quiets
                waited += gate.wait_for_quiet(max(0.0, deadline - time.perf_counter()))
        timed.append(_one_round(workload, gate, meter))
        quiet += gate.quiet(timed[-1][2])
    order = sorted(range(len(timed)), key=lambda i: (not gate.quiet(timed[i][2]), timed[i][2]))
    kept = sorted(order[:rounds])
    _until_case_minimum(workload, gate, min_case_s, timed, kept, meter)
    return Rounds(
        samples_s=[timed[i][0] for i in kept],
        latencies_s=[lat for i in kept for lat in timed[i][1]],
        host_ratios=[timed[i][2] for i in kept],
        discarded=len(timed) - len(kept),
        waited_s=waited,
    )


def _until_case_minimum(
    workload: Workload,
    gate: HostGate,
    min_case_s: float,
    timed: list[tuple[float, list[float], float]],
    kept: list[int],
    meter: IoMeter | None = None,
) -> None:
    """Time more rounds, keeping the quiet ones, until the kept rounds last ``min_case_s``, for
    at most twice the time missing (half the rounds may be slow), or until ``MAX_CASE_ROUNDS``
    are kept; appends to ``timed`` and ``kept``. It does not wait for quiet: a slow hour must not
    stretch the run (waiting up to 3 s a case took a quick session from 6 to 18 minutes)."""
    kept_s = sum(timed[i][0] for i in kept)
    if min_case_s <= 0 or kept_s >= min_case_s:
        return
    stop_at = time.perf_counter() + 2 * (min_case_s - kept_s)
    while kept_s < min_case_s and len(kept) < MAX_CASE_ROUNDS and time.perf_counter() < stop_at:
        timed.append(_one_round(workload, gate, meter))
        if gate.quiet(timed[-1][2]):
            kept.append(len(timed) - 1)
            kept_s += timed[-1][0]


def quota_throttles(workload: Workload, limit: CpuQuota, warm_pass_s: list[float]) -> bool:
    """Whether the CPU quota holds this workload back: more untimed passes, until the warm-up
    spans ``WARM_PERIODS`` of the quota's periods, watched through the cgroup's counters (where
    they cannot be read, it is taken to: long rounds cost time, short ones the figure).

    A one-thread case under a quota of a CPU or more is held back for moments at most (a helper
    thread's odd millisecond) and keeps its rounds; a loader whose workers want more than the
    quota waits for a good part of each period (imgbench.measure.quota)."""
    if not workload.calibrate or workload.self_timed:
        return False
    before, start = limit.throttling(), time.perf_counter()
    while (
        time.perf_counter() - start < WARM_PERIODS * limit.period_s
        and len(warm_pass_s) < MAX_BURSTY_WARM_PASSES
    ):
        warm_pass_s.append(_untimed_round(workload))
    after, elapsed = limit.throttling(), time.perf_counter() - start
    if before is None or after is None:
        return True
    return after.since(before).waited_s > MIN_WAIT_SHARE * elapsed


def quota_columns(
    limit: CpuQuota | None, before: Throttling | None, after: Throttling | None
) -> dict[str, Any]:
    """The row's quota columns: the quota, its period and how often it throttled the rounds."""
    if limit is None:
        return {}
    share = after.since(before).share if before is not None and after is not None else None
    return {
        "cpu_quota": limit.cpus,
        "cpu_quota_period_ms": limit.period_s * 1e3,
        "cpu_throttled_share": share,
    }


def page_faults() -> tuple[int, int]:
    """(minor, major) page faults of this process so far."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_minflt, usage.ru_majflt


def run_case(
    case: Case,
    ctx: CaseContext,
    gate: HostGate,
    instructions_dir: Path | None = None,
    fixed_repeats: int | None = None,
) -> Measurement:
    """Prepare the case's workload (untimed), warm up, calibrate, then time the settings'
    ``rounds`` rounds (or as many as last ``min_case_s``; cold-cache rounds keep ``rounds``).

    ``fixed_repeats`` replaces calibration: a case's later worker processes time rounds of the
    first one's length, so that their rounds pool (:func:`pool`).

    With ``instructions_dir`` (a process under callgrind) one pass over the items is counted
    instead of timed (:mod:`imgbench.measure.instructions`).
    """
    with thread_limits(case.threads):
        seed_everything()  # random augmentations draw the same parameters in every session
        ctx.drawn.clear()  # the samples of the dataset this case draws, for its row
        workload = case.prepare(ctx, case)
        if not workload.items:
            raise ValueError(f"{case.case_id}: the workload has no items")
        injected = extra_work_for(case.case_id)
        if injected:  # test-only (imgbench.measure.knob): the row says so
            workload.fn = with_extra_work(workload.fn, injected)
            workload.extra["injected_extra_work"] = injected
        try:
            measurement = time_workload(
                workload,
                ctx.settings.for_case(case),
                gate,
                instructions_dir=instructions_dir,
                fixed_repeats=fixed_repeats,
                label=case.case_id,
                storage=storage_path(case, ctx, workload),
            )
        finally:
            if workload.close is not None:
                workload.close()
    # what ``close`` found (a write case reads its output back after the rounds) goes in too
    measurement.extra = _extra(workload)
    measurement.columns.update(ctx.sample_columns())
    if notes := ctx.sample_notes():
        measurement.extra["sample"] = "; ".join(notes)
    return measurement


def storage_path(case: Case, ctx: CaseContext, workload: Workload) -> Path | None:
    """Where the case reads from disk: the workload's own ``storage_path``, else a store in the
    session's scratch folder (format cases, loaders of a built format), else the dataset's root;
    None for stages that read no disk and for S3 cases (their data sits behind the server)."""
    if workload.storage_path is not None:
        return workload.storage_path
    if case.disk == "none":
        return None
    if case.disk == "store" and ctx.has_scratch():
        return ctx.scratch_dir()
    return Path(ctx.dataset.manifest.root)


def _extra(workload: Workload) -> dict[str, Any]:
    return {**workload.extra, **(workload.cache.extra() if workload.cache else {})}


def time_workload(
    workload: Workload,
    settings: Settings,
    gate: HostGate,
    instructions_dir: Path | None = None,
    fixed_repeats: int | None = None,
    label: str = "workload",
    storage: Path | None = None,
) -> Measurement:
    """The rounds engine: warm up, calibrate, then time the settings' rounds of a prepared
    workload (a case's, or a user's own loader in ``imgbench profile``); the caller closes it.

    With ``storage`` (the path the case reads), the row gets that disk's facts and its
    /proc/diskstats deltas over the timed rounds (:mod:`imgbench.measure.storage`)."""
    rounds, warmup_rounds = settings.rounds, settings.warmup_rounds
    threads = current_settings()
    warm_pass_s: list[float] = []
    # untimed, their latencies dropped; a counted pass always follows one (a first call's lazy
    # imports would otherwise be counted: +8.8% measured for Pillow)
    for _ in range(max(warmup_rounds, 1 if instructions_dir is not None else 0)):
        warm_pass_s.append(_untimed_round(workload))
    while (
        instructions_dir is None
        and workload.min_round_s > 0
        and sum(warm_pass_s) < workload.min_round_s
        and len(warm_pass_s) < MAX_BURSTY_WARM_PASSES
    ):  # a bursty workload warms up across several bursts before its rounds are sized
        warm_pass_s.append(_untimed_round(workload))
    min_round_s = max(settings.min_round_s, workload.min_round_s)
    if instructions_dir is not None:
        counts = count_pass(workload, instructions_dir, label)
        return _counted(workload, warmup_rounds, threads, counts)
    cold = workload.cache is not None and workload.cache.state == "cold"
    limit = cpu_quota() if fixed_repeats is None else None
    if limit is not None and not cold and quota_throttles(workload, limit, warm_pass_s):
        min_round_s = max(min_round_s, limit.round_floor_s())
    repeats = (
        calibrate(workload, warm_pass_s, min_round_s)
        if fixed_repeats is None
        else repeat_items(workload, fixed_repeats)
    )
    reset_peak_rss()
    minor0, major0 = page_faults()
    case_s = 0.0 if cold else settings.min_case_s
    facts = storage_facts(storage) if storage is not None else None
    meter = IoMeter(facts.device if facts else None)
    limit = cpu_quota()
    before = limit.throttling() if limit is not None else None
    timed = timed_rounds(workload, rounds, gate, case_s, meter)
    after = limit.throttling() if limit is not None else None
    minor1, major1 = page_faults()
    peak = peak_rss_bytes()
    images = max(1, workload.images_per_round * (len(timed.samples_s) + timed.discarded))
    return Measurement(
        samples_s=timed.samples_s,
        latencies_s=np.asarray(timed.latencies_s, dtype=float),
        images_per_round=workload.images_per_round,
        bytes_per_round=workload.bytes_per_round,
        megapixels_per_round=workload.megapixels_per_round,
        rounds=len(timed.samples_s),
        warmup_rounds=warmup_rounds,
        threads=threads,
        peak_rss_bytes=peak,
        cache_method=workload.cache.method if workload.cache else workload.cache_method,
        extra=_extra(workload),
        timer="reported by the tool" if workload.self_timed else "perf_counter",
        library_version=workload.library_version,
        round_repeats=repeats,
        min_round_s=min_round_s,
        min_case_s=case_s,
        page_faults_minor_per_image=(minor1 - minor0) / images,
        page_faults_major_per_image=(major1 - major0) / images,
        host_ratios=timed.host_ratios,
        host_rounds_discarded=timed.discarded,
        host_wait_s=timed.waited_s,
        host_reference_s=gate.reference_s,
        host_max_ratio=gate.max_ratio,
        columns={
            **(facts.columns() if facts else {}),
            **meter.columns(),
            **quota_columns(limit, before, after),
            # the state the rounds started from, where the workload made one (a loader's rounds
            # on an emulated disk are cold; imgbench.loaders.cold)
            **({"cache_state": workload.cache.state} if workload.cache else {}),
        },
    )


def pool(parts: list[Measurement]) -> Measurement:
    """One case measured in several worker processes, as one measurement: the rounds of all,
    and each process's own figure (``process_images_per_s``).

    Every process draws its own heap layout, and on this VM the layout alone moved Pillow's
    decode between two speeds 25% apart (docs/measuring.md, "One process is one layout"): the
    processes sample that spread instead of betting the figure on one draw, as pyperf's
    processes do. The first process calibrates the passes per round the others repeat; where a
    case's own time budget kept another number of inputs in a later process (augmentation cases
    cut slow pipelines' inputs by a first call's time), that process's rounds are scaled to the
    first's images per round before they pool.
    """
    first = parts[0]
    if len(parts) == 1:
        return first
    rounds = [max(1, p.rounds) for p in parts]

    def weighted(values: list[float | None]) -> float | None:
        known = [(v, r) for v, r in zip(values, rounds, strict=True) if v is not None]
        return sum(v * r for v, r in known) / sum(r for _, r in known) if known else None

    return replace(
        first,
        samples_s=[
            s * first.images_per_round / max(1, p.images_per_round)
            for p in parts
            for s in p.samples_s
        ],
        latencies_s=np.concatenate([p.latencies_s for p in parts]),
        rounds=sum(p.rounds for p in parts),
        peak_rss_bytes=max(p.peak_rss_bytes for p in parts),
        page_faults_minor_per_image=weighted([p.page_faults_minor_per_image for p in parts]),
        page_faults_major_per_image=weighted([p.page_faults_major_per_image for p in parts]),
        host_ratios=[r for p in parts for r in p.host_ratios],
        host_rounds_discarded=sum(p.host_rounds_discarded for p in parts),
        host_wait_s=sum(p.host_wait_s for p in parts),
        host_reference_s=min(p.host_reference_s for p in parts),
        process_images_per_s=[
            p.images_per_round / float(np.median(p.samples_s)) for p in parts if p.samples_s
        ],
    )


def _counted(
    workload: Workload, warmup_rounds: int, threads: ThreadSettings, counts: Counts
) -> Measurement:
    """The measurement of a counted pass: instructions per image, no timed rounds."""
    images = max(1, workload.images_per_round)
    return Measurement(
        samples_s=[],
        latencies_s=np.asarray([], dtype=float),
        images_per_round=workload.images_per_round,
        bytes_per_round=workload.bytes_per_round,
        megapixels_per_round=workload.megapixels_per_round,
        rounds=0,
        warmup_rounds=warmup_rounds,
        threads=threads,
        peak_rss_bytes=peak_rss_bytes(),
        cache_method=workload.cache.method if workload.cache else workload.cache_method,
        extra=_extra(workload),
        timer="callgrind instructions",
        library_version=workload.library_version,
        measure="instructions",
        instructions_per_image=counts.instructions / images,
        estimated_cycles_per_image=(
            None if counts.estimated_cycles is None else counts.estimated_cycles / images
        ),
    )
