"""The one place imgbench reaches into pytest-benchmark: handing it rounds timed elsewhere.

imgbench times its rounds itself (in a worker fork, calibrated, host-gated), so pytest-benchmark
is the front door (its flags, table, JSON and comparisons), not the timer. It has no public way
to take external durations; ``BenchmarkFixture._make_stats`` is the private call that does, so
the dependency is pinned below its next minor (pyproject.toml) and
``tests/test_benchmark_shim.py`` checks that the table's statistics are the samples handed over.
"""

from __future__ import annotations

from typing import Any

from imgbench.measure.case import Case
from imgbench.measure.rounds import Measurement

TESTED_VERSIONS = ">=5.1,<5.4"  # the pyproject pin; the shim's test runs on what is installed


def claim(benchmark: Any) -> None:
    """Mark pytest-benchmark's fixture as used by imgbench: its rounds are timed by imgbench's
    engine and handed over afterwards (or the case is a skipped or failed row), so
    pytest-benchmark's "Benchmark fixture was not used at all in this test!" warning, which a
    user cannot act on, does not fire. ``_mode`` is the private attribute it checks (and what
    its "can only be used once" error names)."""
    benchmark._mode = "imgbench"


def quiet_empty_save(config: Any, items: list[Any]) -> None:
    """pytest-benchmark warns "Not saving anything, no benchmarks have been run!" at the end of
    a session with ``--benchmark-save`` and no benchmark; ``imgbench run -k`` starts one such
    session per environment whose cases all fall outside the selection, and its own summary
    says what ran. Where ``items`` is empty, its session object (``config._benchmarksession``,
    private) is marked disabled: that skips the warning, and nothing else in a session without
    items."""
    session = getattr(config, "_benchmarksession", None)
    if session is not None and not items:
        session.disabled = True


def _hand_over(benchmark: Any, samples: list[float]) -> None:
    """Give round times measured by imgbench to pytest-benchmark, so its table and JSON agree
    with the rows."""
    stats = benchmark._make_stats(1)  # the only way to hand pytest-benchmark external durations
    for seconds in samples:
        stats.update(seconds)


def record_samples(benchmark: Any, case: Case, measurement: Measurement) -> None:
    """Hand a case's kept rounds, and what they measured, to pytest-benchmark's table and JSON."""
    benchmark.extra_info.update(
        {
            "imgbench_case_id": case.case_id,
            "imgbench_stage": case.stage,
            "imgbench_library": case.library,
            "imgbench_variant": case.variant,
            "imgbench_params": dict(case.params),
            "images_per_round": measurement.images_per_round,
            "bytes_per_round": measurement.bytes_per_round,
            "megapixels_per_round": measurement.megapixels_per_round,
            "imgbench_process_model": measurement.process_model,
        }
    )
    if measurement.instructions_per_image is not None:
        benchmark.extra_info["instructions_per_image"] = measurement.instructions_per_image
    if measurement.samples_s:  # a counted case has no timed rounds to hand over
        _hand_over(benchmark, measurement.samples_s)
