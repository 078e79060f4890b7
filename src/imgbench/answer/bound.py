"""Which stage bounds a loader configuration, and the next thing to try, from measured rows only.

A loader row records the seconds per image each step of its pipeline took (``stage_times_s``) and,
with workers, how busy they were (``parallel_efficiency``: their work over workers x wall time).
Low efficiency means the hand-over between processes (collating, pickling, shared memory) bounds
the loader, not a step; otherwise the largest step does. The next thing to try is the faster
alternative the other stages measured on the same machine and dataset for that step, or the
setting that moves the bound (uint8 batches, more workers), never a guess without rows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd

from imgbench.answer.intervals import ratio, row_interval, run_to_run_cv
from imgbench.answer.rows import (
    FILES,
    Configuration,
    Row,
    is_ceiling,
    number,
    param_is,
    where,
)
from imgbench.results.schema import json_object

HAND_OVER_LIMITED = 0.6  # parallel efficiency below this: moving batches between processes
WORTH_TRYING = 1.10  # an alternative this much faster in its own stage is worth a loader run
FOLDER_FORMAT = "folder"  # the format stage's name for the files a loader reads as they are
STEP_TO_STAGE = {"decode": "read", "augment": "augment", "read": "format"}
NEAR_MISS = "near miss: "  # faster_alternative's prefix for one below the WORTH_TRYING threshold


@dataclass(frozen=True)
class Bound:
    """The stage that bounds a configuration: ``stage`` is a step name or ``hand-over``."""

    stage: str
    text: str
    ms_per_image: float | None = None


def bounding_stage(extra: dict[str, object], config: Configuration, cores: int | None) -> Bound:
    times = {
        str(k): float(v)
        for k, v in (json_object(extra.get("stage_times_s")) or {}).items()
        if number(v) is not None
    }
    if not times:
        return Bound("unknown", "unknown: the row has no stage times")
    step = max(times, key=times.__getitem__)
    total = sum(times.values())
    share = times[step] / total if total > 0 else 0.0
    ms = 1e3 * times[step]
    efficiency = number(extra.get("parallel_efficiency"))
    if config.workers > 0 and efficiency is not None and efficiency < HAND_OVER_LIMITED:
        return Bound(
            "hand-over",
            f"hand-over between processes: the workers were busy {efficiency:.0%} of the time, "
            f"below {HAND_OVER_LIMITED:.0%} (slowest step {step}, {ms:.2f} ms/image)",
            ms,
        )
    text = f"{step}: {ms:.2f} ms of the pipeline's {1e3 * total:.2f} ms per image ({share:.0%})"
    if cores and config.workers >= cores:
        text += f", with all {cores} cores busy"
    return Bound(step, text, ms)


def _decoder_of(row: Row) -> str:
    return f"{row['library']}/{row['variant']}"


@dataclass(frozen=True)
class _Alternatives:
    """A stage's rows comparable with the configuration's step, and how it names its choice."""

    rows: pd.DataFrame
    used: str  # the configuration's choice, named as ``name`` names a row
    name: Callable[[Row], str]
    label: str


def _read_alternatives(
    rows: pd.DataFrame, config: Configuration, codec: str | None
) -> _Alternatives:
    def comparable(row: Row) -> bool:
        full = not json_object(row.get("params_json")).get("reduce")
        return full and (row.get("codec"), row.get("threads"), row.get("mode")) == (
            codec,
            1,
            "memory",
        )

    return _Alternatives(rows[where(rows, comparable)], config.decoder, _decoder_of, "decoder")


def _augment_alternatives(rows: pd.DataFrame, config: Configuration) -> _Alternatives:
    recipe = config.recipe or "train-classification"
    used = config.augment

    def comparable(row: Row) -> bool:
        single = row.get("threads") == 1 and number(row.get("batch_size")) is None
        return single and param_is("pipeline", recipe)(row)

    def name(row: Row) -> str:  # one library's variants are that library's choice
        library = str(row["library"])
        return used if library == used.split("/")[0] else _decoder_of(row)

    return _Alternatives(rows[where(rows, comparable)], used, name, "augmentation")


def _format_alternatives(rows: pd.DataFrame, config: Configuration) -> _Alternatives:
    def comparable(row: Row) -> bool:
        # reads of a local store (not writes, nor uploads to S3), from a warm page cache
        warm = row.get("cache_state") == "warm" and row.get("mode") == "read"
        return warm and param_is("payload", "bytes", "bytes")(row)

    def name(row: Row) -> str:
        return str(json_object(row["params_json"]).get("format") or row["library"])

    used = FOLDER_FORMAT if config.format == FILES else config.format
    return _Alternatives(rows[where(rows, comparable)], used, name, "reader (format)")


def faster_alternative(
    bound: Bound, config: Configuration, group: pd.DataFrame, codec: str | None
) -> str | None:
    """The fastest alternative for the bounding step that the step's own stage measured here,
    when it beats the one this configuration uses by ``WORTH_TRYING``; one that is faster by
    less comes back prefixed ``NEAR_MISS`` (``next_step`` says it is below the threshold)."""
    stage = STEP_TO_STAGE.get(bound.stage)
    if stage is None:
        return None
    rows = group[where(group, lambda r: r.get("stage") == stage and not is_ceiling(r))]
    if stage == "read":
        found = _read_alternatives(rows, config, codec)
    elif stage == "augment":
        found = _augment_alternatives(rows, config)
    else:
        found = _format_alternatives(rows, config)
    rows, used, name, label = found.rows, found.used, found.name, found.label
    if rows.empty:
        return None
    best = rows.loc[pd.to_numeric(rows["images_per_s_median"]).idxmax()]
    if name(best) == used:
        return None
    best_ips = float(best["images_per_s_median"])
    mine = rows[where(rows, lambda r: name(r) == used)]
    if mine.empty:
        return (
            f"try {label} {name(best)}: the fastest in the {stage} stage here "
            f"({best_ips:,.0f} images/s; {best['case_id']})"
        )
    mine_row = mine.loc[pd.to_numeric(mine["images_per_s_median"]).idxmax()]
    mine_ips = float(mine_row["images_per_s_median"])
    cv = run_to_run_cv(stage, 0)
    between = ratio(row_interval(best, cv), row_interval(mine_row, cv))
    supported = between is not None and between.low > 1.0
    if best_ips < WORTH_TRYING * mine_ips or not supported:
        noise = "" if supported else ", within the noise"
        return NEAR_MISS + (
            f"{label} {name(best)} was {best_ips / mine_ips - 1:.0%} faster than {used} in the "
            f"{stage} stage ({best_ips:,.0f} vs {mine_ips:,.0f} images/s{noise}; "
            f"{best['case_id']})"
        )
    return (
        f"try {label} {name(best)}: {between.text() if between else ''} the {label} used here "
        f"in the {stage} stage ({best_ips:,.0f} vs {mine_ips:,.0f} images/s, at least "
        f"{WORTH_TRYING - 1:.0%} faster and beyond the noise; {best['case_id']})"
    )


def next_step(
    bound: Bound,
    config: Configuration,
    group: pd.DataFrame,
    codec: str | None,
    cores: int | None,
    max_workers_measured: int,
) -> str:
    """One sentence: what to measure or change next, with the threshold behind it."""
    alternative = faster_alternative(bound, config, group, codec)
    near = None
    if alternative and alternative.startswith(NEAR_MISS):
        near, alternative = alternative.removeprefix(NEAR_MISS), None
    if alternative:
        return alternative
    if bound.stage == "hand-over" and "uint8" not in config.recipe:
        return (
            "ship uint8 batches and normalise on the accelerator (the loaders' uint8 pipeline): a "
            "quarter of the bytes cross between processes"
        )
    if cores and config.workers < cores and max_workers_measured <= config.workers:
        return f"measure more workers: none above {config.workers} was measured, {cores} cores"
    if bound.stage in STEP_TO_STAGE:
        stage = STEP_TO_STAGE[bound.stage]
        text = (
            f"nothing at least {WORTH_TRYING - 1:.0%} faster for the {bound.stage} step was "
            f"measured in the {stage} stage here"
        )
        if near:
            text += f" ({near}: below the threshold)"
        return text + (
            f": reduce the {bound.stage} work (e.g. a reduced-size decode, a lighter recipe) or "
            "move it to the accelerator"
        )
    return (
        f"the bound is {bound.stage}, which no other stage measures: measure another loader or "
        "more workers"
    )
