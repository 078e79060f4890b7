"""Timing one case through pytest-benchmark, and turning its samples into metrics.

Each timed round applies the workload's function to every item; the round time gives images/s
(images per round / seconds), so throughput is per image, not pytest-benchmark's calls per
second. Per-image latencies are taken inside the round with ``perf_counter``.

Rounds are calibrated, as pyperf calibrates loops and pytest-benchmark uses ``min_time``: after
the warm-up, a round that would last less than ``min_round_s`` repeats the items (whole passes)
until it does, so a round of sixteen 2-microsecond reads times the library, not the clock's and
the scheduler's grain. ``round_repeats`` in the row says how many passes a round made.
"""

from __future__ import annotations

import math
import resource
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from imgbench.harness.case import Case, Workload
from imgbench.harness.context import CaseContext
from imgbench.harness.memory import peak_rss_bytes, reset_peak_rss
from imgbench.harness.threads import ThreadSettings, current_settings, thread_limits


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
    # page faults of the measuring process during the timed rounds, per image: the allocator
    # returning memory to the kernel shows up here (fresh pages are faulted in again)
    page_faults_minor_per_image: float | None = None
    page_faults_major_per_image: float | None = None
    process_model: str = "in-process"
    allocator: str | None = None

    def metrics(self) -> dict[str, Any]:
        samples = np.asarray(self.samples_s, dtype=float)
        median, q1, q3 = (float(np.percentile(samples, p)) for p in (50, 25, 75))
        lat_ms = self.latencies_s * 1e3
        return {
            "samples_s": [float(s) for s in samples],
            "images_per_round": self.images_per_round,
            "bytes_per_round": self.bytes_per_round,
            "megapixels_per_round": self.megapixels_per_round,
            "rounds": self.rounds,
            "iterations": 1,
            "warmup_rounds": self.warmup_rounds,
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
            "peak_rss_bytes": self.peak_rss_bytes,
            "cache_method": self.cache_method,
            "round_repeats": self.round_repeats,
            "min_round_s": self.min_round_s,
            "page_faults_minor_per_image": self.page_faults_minor_per_image,
            "page_faults_major_per_image": self.page_faults_major_per_image,
            "process_model": self.process_model,
            "allocator": self.allocator,
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


def calibrate(workload: Workload, warm_pass_s: list[float], min_round_s: float) -> int:
    """Repeat the workload's items so one round lasts ``min_round_s``; returns the repeats.

    ``warm_pass_s`` are the durations of the untimed passes just run (the fastest counts: a
    round must not fall short of the minimum on a quick day).
    """
    if (
        not workload.calibrate
        or workload.self_timed
        or (workload.cache is not None and workload.cache.state == "cold")
    ):
        return 1
    if not warm_pass_s:  # no warm-up rounds: one untimed pass tells the cost
        if workload.before_round is not None:
            workload.before_round()
        start = time.perf_counter()
        _timed_round(workload, [])
        warm_pass_s = [time.perf_counter() - start]
    repeats = round_repeats(min(warm_pass_s), min_round_s)
    if repeats > 1:
        workload.items = list(workload.items) * repeats
        workload.bytes_per_round *= repeats
        workload.megapixels_per_round *= repeats
    return repeats


# Runs the timed rounds of a prepared workload, appending per-item latencies; returns round seconds
RoundTimer = Callable[[Workload, int, list[float]], list[float]]


def plain_rounds(workload: Workload, rounds: int, latencies: list[float]) -> list[float]:
    """The timed rounds with ``perf_counter``, no pytest-benchmark: what a worker process runs."""
    samples: list[float] = []
    for _ in range(rounds):
        if workload.before_round is not None:
            workload.before_round()
        if workload.self_timed:
            per_item = [float(workload.fn(item)) for item in workload.items]
            latencies.extend(per_item)
            samples.append(sum(per_item))
            continue
        start = time.perf_counter()
        _timed_round(workload, latencies)
        samples.append(time.perf_counter() - start)
    return samples


def _extra_info(benchmark: Any, case: Case, images: int, nbytes: int, megapixels: float) -> None:
    """What pytest-benchmark's JSON says about the case, however its rounds were timed."""
    benchmark.extra_info.update(
        {
            "imgbench_case_id": case.case_id,
            "imgbench_stage": case.stage,
            "imgbench_library": case.library,
            "imgbench_variant": case.variant,
            "imgbench_params": dict(case.params),
            "images_per_round": images,
            "bytes_per_round": nbytes,
            "megapixels_per_round": megapixels,
        }
    )


def _hand_over(benchmark: Any, samples: list[float]) -> None:
    """Give round times measured outside ``pedantic`` (a tool's own, a worker's) to
    pytest-benchmark, so its table and JSON agree with the rows."""
    stats = benchmark._make_stats(1)  # the only way to hand pytest-benchmark external durations
    for seconds in samples:
        stats.update(seconds)


def benchmark_rounds(benchmark: Any, case: Case) -> RoundTimer:
    """The timed rounds through pytest-benchmark's ``pedantic``, so its table and JSON agree."""

    def run(workload: Workload, rounds: int, latencies: list[float]) -> list[float]:
        _extra_info(
            benchmark,
            case,
            workload.images_per_round,
            workload.bytes_per_round,
            workload.megapixels_per_round,
        )
        if workload.self_timed:  # a tool that times itself: its durations are the samples
            samples = plain_rounds(workload, rounds, latencies)
            _hand_over(benchmark, samples)
            return samples
        benchmark.pedantic(
            _timed_round,
            args=(workload, latencies),
            setup=workload.before_round,
            rounds=rounds,
            warmup_rounds=0,
            iterations=1,
        )
        return list(benchmark.stats.stats.data) if benchmark.stats else []

    return run


def record_samples(benchmark: Any, case: Case, measurement: Measurement) -> None:
    """Hand rounds timed in a worker process to pytest-benchmark's table and JSON."""
    _extra_info(
        benchmark,
        case,
        measurement.images_per_round,
        measurement.bytes_per_round,
        measurement.megapixels_per_round,
    )
    benchmark.extra_info["imgbench_process_model"] = measurement.process_model
    _hand_over(benchmark, measurement.samples_s)


def page_faults() -> tuple[int, int]:
    """(minor, major) page faults of this process so far."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_minflt, usage.ru_majflt


def measure(
    benchmark: Any,
    case: Case,
    ctx: CaseContext,
    rounds: int,
    warmup_rounds: int,
    min_round_s: float = 0.0,
) -> Measurement:
    """Prepare the case's workload here, then time it with ``benchmark.pedantic``."""
    return run_case(
        case, ctx, rounds, warmup_rounds, min_round_s, benchmark_rounds(benchmark, case)
    )


def run_case(
    case: Case,
    ctx: CaseContext,
    rounds: int,
    warmup_rounds: int,
    min_round_s: float,
    time_rounds: RoundTimer,
) -> Measurement:
    """Prepare the case's workload (untimed), warm up, calibrate, then time ``rounds`` rounds."""
    with thread_limits(case.threads):
        workload = case.prepare(ctx, case)
        if not workload.items:
            raise ValueError(f"{case.case_id}: the workload has no items")
        try:
            settings = current_settings()
            latencies: list[float] = []
            warm_pass_s: list[float] = []
            for _ in range(warmup_rounds):  # untimed: their latencies are dropped
                if workload.before_round is not None:
                    workload.before_round()
                start = time.perf_counter()
                _timed_round(workload, [])
                warm_pass_s.append(time.perf_counter() - start)
            repeats = calibrate(workload, warm_pass_s, min_round_s)
            reset_peak_rss()
            minor0, major0 = page_faults()
            samples = time_rounds(workload, rounds, latencies)
            minor1, major1 = page_faults()
            peak = peak_rss_bytes()
        finally:
            if workload.close is not None:
                workload.close()
    images = max(1, workload.images_per_round * len(samples))
    return Measurement(
        samples_s=samples,
        latencies_s=np.asarray(latencies, dtype=float),
        images_per_round=workload.images_per_round,
        bytes_per_round=workload.bytes_per_round,
        megapixels_per_round=workload.megapixels_per_round,
        rounds=len(samples),
        warmup_rounds=warmup_rounds,
        threads=settings,
        peak_rss_bytes=peak,
        cache_method=workload.cache.method if workload.cache else workload.cache_method,
        extra={**workload.extra, **(workload.cache.extra() if workload.cache else {})},
        timer="reported by the tool" if workload.self_timed else "perf_counter",
        library_version=workload.library_version,
        round_repeats=repeats,
        min_round_s=min_round_s,
        page_faults_minor_per_image=(minor1 - minor0) / images,
        page_faults_major_per_image=(major1 - major0) / images,
    )
