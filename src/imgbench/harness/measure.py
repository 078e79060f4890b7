"""Timing one case through pytest-benchmark, and turning its samples into metrics.

Each timed round applies the workload's function to every item once; the round time gives
images/s (images per round / seconds), so throughput is per image, not pytest-benchmark's
calls per second. Per-image latencies are taken inside the round with ``perf_counter``.
"""

from __future__ import annotations

import time
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
        }


def _timed_round(workload: Workload, latencies: list[float]) -> None:
    fn = workload.fn
    clock = time.perf_counter
    for item in workload.items:
        start = clock()
        fn(item)
        latencies.append(clock() - start)


def _self_timed_rounds(
    benchmark: Any, workload: Workload, rounds: int, latencies: list[float]
) -> None:
    """Feed a self-timing tool's own durations to pytest-benchmark, so its table and JSON agree."""
    stats = benchmark._make_stats(1)  # the only way to hand pytest-benchmark external durations
    for _ in range(rounds):
        if workload.before_round is not None:
            workload.before_round()
        per_item = [float(workload.fn(item)) for item in workload.items]
        latencies.extend(per_item)
        stats.update(sum(per_item))


def measure(
    benchmark: Any, case: Case, ctx: CaseContext, rounds: int, warmup_rounds: int
) -> Measurement:
    """Prepare the case's workload, then time it with ``benchmark.pedantic``."""
    with thread_limits(case.threads):
        workload = case.prepare(ctx, case)
        if not workload.items:
            raise ValueError(f"{case.case_id}: the workload has no items")
        try:
            settings = current_settings()
            latencies: list[float] = []
            warm: list[float] = []
            for _ in range(
                warmup_rounds
            ):  # warm-up outside pytest-benchmark: its latencies are dropped
                if workload.before_round is not None:
                    workload.before_round()
                _timed_round(workload, warm)
            reset_peak_rss()
            benchmark.extra_info.update(
                {
                    "imgbench_case_id": case.case_id,
                    "imgbench_stage": case.stage,
                    "imgbench_library": case.library,
                    "imgbench_variant": case.variant,
                    "imgbench_params": dict(case.params),
                    "images_per_round": workload.images_per_round,
                    "bytes_per_round": workload.bytes_per_round,
                    "megapixels_per_round": workload.megapixels_per_round,
                }
            )
            if workload.self_timed:
                _self_timed_rounds(benchmark, workload, rounds, latencies)
            else:
                benchmark.pedantic(
                    _timed_round,
                    args=(workload, latencies),
                    setup=workload.before_round,
                    rounds=rounds,
                    warmup_rounds=0,
                    iterations=1,
                )
            peak = peak_rss_bytes()
        finally:
            if workload.close is not None:
                workload.close()
    samples = list(benchmark.stats.stats.data) if benchmark.stats else []
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
    )
