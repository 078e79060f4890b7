"""Two things beside the pick that its figure alone does not say, read from loader rows only.

- **The in-RAM ceilings** (``preload`` in a row's parameters, ``imgbench.loaders.in_ram``): the
  default recipe through the DataLoader and the thread pool with the pool's encoded bytes in RAM
  (nothing left to read) and with its decoded pixels in RAM (nothing left to read or decode);
  each kind's ceiling is its fastest row. The pick's distance to each is its images/s over the
  ceiling's, with the 95% interval of the ratio: how much reading and decoding still cost, and
  what a preload could buy at best.
- **Training ranks** (``ranks`` in the parameters, ``imgbench.loaders.ranks``): R loaders at once
  sharing the cores, one per GPU rank. The advice divides the cores among the ranks: the per-rank
  worker count whose total images/s is highest, where the counts differ beyond the noise; the
  fewer workers where they tie (fewer processes, less memory).

Neither kind is a configuration the answer picks from (``imgbench.answer.rows.is_experiment``).
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from imgbench.answer.intervals import Interval, Ratio, ratio, row_interval, run_to_run_cv
from imgbench.answer.rows import Row, newest_per_case, number
from imgbench.results.schema import json_object

KINDS = {
    "bytes": "the images' encoded bytes in RAM (nothing left to read)",
    "decoded": "their decoded pixels in RAM (nothing left to read or decode)",
}


@dataclass(frozen=True)
class Ceiling:
    """The fastest row of one in-RAM kind."""

    kind: str  # "bytes" | "decoded"
    workers: int
    interval: Interval
    case_id: str
    run_id: str
    recipe: str  # its decoder and augmentation, as the row's parameters name them
    loader: str  # the row's system (or library)

    def cite(self) -> str:
        return f"{self.case_id} in run {self.run_id}"


@dataclass(frozen=True)
class RankRow:
    """R ranks' loaders at ``workers`` each: their total images/s."""

    ranks: int
    workers: int
    interval: Interval
    case_id: str


def _interval(row: Row) -> Interval:
    workers = int(number(row.get("workers")) or 0)
    return row_interval(row, run_to_run_cv("loader", workers))


def ceilings(loaders: pd.DataFrame) -> list[Ceiling]:
    """The fastest newest row of each in-RAM kind among ``loaders`` (timed ok loader rows of one
    machine and dataset), bytes first."""
    found: dict[str, Ceiling] = {}
    for _, row in newest_per_case(loaders).iterrows():
        params = json_object(row.get("params_json"))
        kind = params.get("preload")
        if kind not in KINDS:
            continue
        ceiling = Ceiling(
            str(kind),
            int(number(row.get("workers")) or 0),
            _interval(row),
            str(row["case_id"]),
            str(row["run_id"]),
            f"{params.get('decoder', '?')} + {params.get('pipeline', '?')}",
            str(row.get("system") or row.get("library") or "?"),
        )
        if kind not in found or ceiling.interval.value > found[kind].interval.value:
            found[str(kind)] = ceiling
    return [found[k] for k in KINDS if k in found]


def distance(pick: Interval, ceiling: Ceiling) -> Ratio | None:
    """The pick over the ceiling, with the ratio's 95% interval."""
    return ratio(pick, ceiling.interval)


def distance_text(pick: Interval | None, found: list[Ceiling]) -> str | None:
    """``the pick runs at 62% (55-70%) of the same recipe with the images' encoded bytes in RAM
    (1,150 images/s, DataLoader at 2 workers: nothing left to read) and at 30% (...) ...``."""
    if pick is None or not found:
        return None
    parts, recipes = [], []
    for ceiling in found:
        share = distance(pick, ceiling)
        if share is None:
            continue
        parts.append(
            f"{100 * share.factor:.0f}% ({100 * share.low:.0f}-{100 * share.high:.0f}%) of "
            f"{KINDS[ceiling.kind]}: {ceiling.interval.value:,.0f} images/s through the "
            f"{ceiling.loader} at {ceiling.workers} workers"
        )
        recipes.append(ceiling.recipe)
    if not parts:
        return None
    return (
        "the pick runs at "
        + "; and at ".join(parts)
        + f" (the ceilings' recipe: {', '.join(dict.fromkeys(recipes))}; over 100% where the "
        "pick's parts beat it)"
    )


def rank_rows(loaders: pd.DataFrame) -> list[RankRow]:
    """Every newest row of R > 1 ranks, by ranks then workers per rank."""
    rows = []
    for _, row in newest_per_case(loaders).iterrows():
        ranks = int(number(json_object(row.get("params_json")).get("ranks")) or 1)
        if ranks > 1:
            workers = int(number(row.get("workers")) or 0)
            rows.append(RankRow(ranks, workers, _interval(row), str(row["case_id"])))
    return sorted(rows, key=lambda r: (r.ranks, r.workers))


def ranks_text(loaders: pd.DataFrame, cores: int | None) -> str | None:
    """Per number of ranks: each per-rank worker count's total, and the count to give each rank
    (the fastest; the fewest workers among those that tie with it)."""
    rows = rank_rows(loaders)
    if not rows:
        return None
    texts = []
    for ranks in sorted({r.ranks for r in rows}):
        these = [r for r in rows if r.ranks == ranks]
        fastest = max(these, key=lambda r: r.interval.value)
        tied = [
            r
            for r in these
            if r is fastest
            or ((found := ratio(fastest.interval, r.interval)) is not None and not found.supported)
        ]
        chosen = min(tied, key=lambda r: r.workers)
        figures = ", ".join(
            f"{r.workers} worker{'s' if r.workers != 1 else ''} each: "
            f"{r.interval.value:,.0f} images/s in total"
            for r in these
        )
        why = "the fastest" if len(tied) == 1 else "the fewest workers among those within the noise"
        where = f" sharing the {cores} cores" if cores else ""
        texts.append(
            f"{ranks} training ranks{where} (one DataLoader per rank over its "
            f"DistributedSampler shard): {figures}; give each rank {chosen.workers} "
            f"worker{'s' if chosen.workers != 1 else ''} ({why})"
        )
    return "; ".join(texts)
