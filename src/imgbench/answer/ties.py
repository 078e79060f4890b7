"""Ties said as ties: which candidates the measurements cannot tell from the fastest, and which
of them to pick, by a stated secondary rule.

The tie rule: a candidate ties with the fastest when the 95% interval of the fastest's images/s
over the candidate's (``intervals.ratio``) reaches down to 1.0, i.e. the measurements support no
difference. The secondary rule, applied in order within the tied set: the least memory (peak
summed PSS of the loader's processes; within ``MEMORY_TIE`` of the least counts as the least),
then the fewest processes, then the fewest extra dependencies (distributions beyond
``BASE_DISTRIBUTIONS``), then the most parts shared with the common default (what the user already
runs), then the highest median. The first rule that leaves one candidate is the one that decided.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from imgbench.answer.intervals import ratio
from imgbench.answer.measured import Measured
from imgbench.answer.rows import FILES, REFERENCE_LOADER, Configuration, number

# the regression gate's default practical margin for memory (docs/regression.md): a peak within
# 10% of the least is no difference a user would act on
MEMORY_TIE = 0.10
# what a PyTorch user has already: torch, torchvision, Pillow (and what they pull in)
BASE_DISTRIBUTIONS = frozenset({"torch", "torchvision", "pillow", "numpy", "python"})
# rows without ``pipeline_versions``: the configuration's parts that need nothing beyond the base
BASE_PARTS = frozenset(
    {"pillow", "torchvision", "torch", REFERENCE_LOADER, "threads", "threadpool", "queue-feeder"}
)


def processes_of(extra: Mapping[str, Any], config: Configuration, worker_processes: bool) -> int:
    """Processes the loader ran: the distinct processes its memory timeline sampled, else its
    worker pids plus the main one, else 1 + workers for a loader whose workers are processes."""
    timeline = extra.get("memory_timeline")
    if isinstance(timeline, list) and timeline:
        names = {p.get("process") for p in timeline if isinstance(p, Mapping)}
        if names:
            return len(names)
    pids = extra.get("worker_pids")
    if isinstance(pids, list) and pids:
        return 1 + len(pids)
    return 1 + config.workers if worker_processes else 1


def extra_dependencies(extra: Mapping[str, Any], config: Configuration) -> tuple[str, ...]:
    """Distributions beyond torch, torchvision and Pillow that the pipeline imported (the row's
    ``pipeline_versions``), else the configuration's parts outside ``BASE_PARTS``."""
    versions = extra.get("pipeline_versions")
    if isinstance(versions, Mapping) and versions:
        names = {str(k).lower() for k in versions}
    else:
        names = {
            config.decoder.split("/")[0],
            config.augment.split("/")[0],
            config.loader,
        }
        names = {n for n in names if n not in BASE_PARTS}
    return tuple(sorted(n for n in names if n and n != "?" and n not in BASE_DISTRIBUTIONS))


def familiar_parts(config: Configuration) -> int:
    """How many of the common default's parts the configuration keeps (what users already run)."""
    return sum(
        (
            config.loader == REFERENCE_LOADER,
            config.format == FILES,
            config.decoder.startswith("pillow/"),
            config.augment.startswith("torchvision/"),
            not config.knobs,
            config.allocator in (None, "glibc"),
        )
    )


def equivalent_to_fastest(ranked: Sequence[Measured]) -> list[Measured]:
    """The candidates (``ranked`` best median first) the measurements cannot tell from the first."""
    if not ranked:
        return []
    fastest = ranked[0]
    tied = [fastest]
    for other in ranked[1:]:
        if fastest.interval is None or other.interval is None:
            tied.append(other)  # no interval: nothing supports a difference
            continue
        r = ratio(fastest.interval, other.interval)
        if r is None or r.low <= 1.0:
            tied.append(other)
    return tied


@dataclass(frozen=True)
class Pick:
    """The configuration picked within the tied set, and the rule that decided, in words."""

    measured: Measured
    rule: str


def _mb(value: float | None) -> str:
    return "?" if value is None else f"{value / 1e6:,.0f} MB"


def pick(tied: Sequence[Measured]) -> Pick:
    """Apply the secondary rule within ``tied`` (best median first)."""
    if len(tied) == 1:
        return Pick(tied[0], "the fastest; nothing else ties with it within the noise")
    pool = list(tied)

    def least_memory(items: list[Measured]) -> list[Measured]:
        known = [m for m in items if number(m.memory_bytes) is not None]
        if not known:
            return items
        least = min(float(m.memory_bytes or 0) for m in known)
        return [m for m in known if float(m.memory_bytes or 0) <= least * (1 + MEMORY_TIE)]

    def fewest_processes(items: list[Measured]) -> list[Measured]:
        fewest = min(m.processes for m in items)
        return [m for m in items if m.processes == fewest]

    def fewest_dependencies(items: list[Measured]) -> list[Measured]:
        fewest = min(len(m.extra_dependencies) for m in items)
        return [m for m in items if len(m.extra_dependencies) == fewest]

    def most_familiar(items: list[Measured]) -> list[Measured]:
        most = max(familiar_parts(m.configuration) for m in items)
        return [m for m in items if familiar_parts(m.configuration) == most]

    steps: list[tuple[str, Callable[[list[Measured]], list[Measured]]]] = [
        ("least_memory", least_memory),
        ("fewest_processes", fewest_processes),
        ("fewest_dependencies", fewest_dependencies),
        ("most_familiar", most_familiar),
    ]
    for name, keep in steps:
        kept = keep(pool)
        if len(kept) == 1:
            return Pick(kept[0], _reason(name, kept[0], tied, len(pool) < len(tied)))
        pool = kept
    return Pick(
        pool[0],
        "the highest median among the tied configurations alike in memory, processes, "
        "dependencies and familiarity",
    )


def _reason(rule: str, chosen: Measured, tied: Sequence[Measured], narrowed: bool) -> str:
    prefix = "among those alike in the earlier rules, " if narrowed else ""
    if rule == "least_memory":
        others = [m.memory_bytes for m in tied if m is not chosen and m.memory_bytes is not None]
        least_other = min(others) if others else None
        return (
            f"it uses the least memory ({_mb(chosen.memory_bytes)} peak, the next "
            f"{_mb(least_other)}; within {MEMORY_TIE:.0%} counts as the same)"
        )
    if rule == "fewest_processes":
        return f"{prefix}it runs the fewest processes ({chosen.processes})"
    if rule == "fewest_dependencies":
        deps = ", ".join(chosen.extra_dependencies) or "none"
        return (
            f"{prefix}it needs the fewest libraries beyond torch, torchvision and Pillow ({deps})"
        )
    return f"{prefix}it keeps the most of the common default's parts (what you already run)"
