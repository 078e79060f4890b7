"""Decoders ranked twice: on one thread (the reader stage) and inside the loader (the decoder
supply, ``imgbench.loaders.supply``), side by side, with where the order differs.

Why: a single-thread ranking is not a ranking inside a DataLoader (the 2026 imread_benchmark
paper saw them flip). Rows only, as the rest of the answer:

- *one thread*: reader rows of JPEG from memory on one pinned thread, full-size output (no
  ``reduce``), the main session (no ``allocator`` parameter); the newest row per decoder
  (``library/variant``).
- *in the loader*: loader rows that are a real pipeline (no experiment, no decode-only pass,
  no knob: a variant without ``+``), from the dataset's files, grouped by loader, augmentation
  pipeline and batch size; the group with the most decoders (the supply) is the ranking. Per
  decoder (``params_json.decoder``): images/s at each worker count and the best of them.

Every figure carries its 95% interval (``intervals.row_interval``, widened by the read stage's
between-session CV on one thread, the loader's in the loader, or by the case's own spread from
three runs on, as the answer does), and a place is only said to change where the measurements
support it: the tie rule of ``imgbench.answer.ties`` (the interval of the ratio reaches 1.0).

Shared by the dashboard's Readers page and ``imgbench report``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field

import pandas as pd

from imgbench.answer.intervals import Interval, own_cv, ratio, row_interval, run_to_run_cv
from imgbench.answer.rows import (
    FILES,
    REFERENCE_LOADER,
    Row,
    by_machine_and_dataset,
    is_decode_only,
    is_experiment,
    newest_per_case,
    number,
    where,
)
from imgbench.results.schema import json_object

CODEC = "jpeg"
SUPPLY_HINT = "`imgbench run -k loader` with the default profile (LoaderPlan.supply_decoders)"
BEST = "best_images_per_s"
VERSUS = "vs the fastest"  # "fastest", "tie" or "1.35x slower (1.28-1.42x)"
SAME_ORDER = "the same order as on one thread"


def ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


@dataclass
class DecoderRanking:
    """One machine and dataset: the two rankings and where their order differs."""

    machine: str
    dataset: str
    loader: str  # the loader the in-loader ranking ran through
    pipeline: str  # its augmentation pipeline (params_json.pipeline)
    batch_size: int | None
    # decoder, images_per_s, rank (1 = fastest), its interval (``interval_columns``), VERSUS
    single: pd.DataFrame
    # decoder, best_images_per_s, best_workers, rank, VERSUS, one column per worker count, and
    # each figure's interval (``interval_columns``)
    in_loader: pd.DataFrame
    worker_counts: list[int] = field(default_factory=list)
    # "best over worker counts" and "N workers" -> lines naming each decoder whose place differs
    # and the measurements support it
    differences: dict[str, list[str]] = field(default_factory=dict)
    # the same labels -> places that differ between decoders that tie (within the noise)
    ties: dict[str, list[str]] = field(default_factory=dict)

    @property
    def title(self) -> str:
        return f"{self.machine} · {self.dataset}"

    def summary(self) -> str:
        """One sentence: does the order on one thread hold inside the loader?"""
        common = self.common()
        if len(common) < 2:
            plural = "" if len(common) == 1 else "s"
            return (
                f"{len(common)} decoder{plural} measured both on one thread and in the loader: "
                "nothing to compare"
            )
        changed = [key for key, lines in self.differences.items() if lines]
        tied = [key for key, lines in self.ties.items() if lines]
        if not changed and tied:
            return (
                f"The {len(common)} decoders keep their single-thread order in the loader within "
                f"the noise: the places that differ ({', '.join(tied)}) are between decoders "
                "that tie."
            )
        if not changed:
            return f"The {len(common)} decoders keep their single-thread order in the loader."
        return (
            f"The order of the {len(common)} decoders differs from one thread's "
            f"({', '.join(changed)})."
        )

    def common(self) -> list[str]:
        return sorted(set(self.single["decoder"]) & set(self.in_loader["decoder"]))

    def difference_text(self, label: str) -> str:
        """Where the order differs for ``label``, ties said as ties."""
        supported, tied = self.differences.get(label, []), self.ties.get(label, [])
        if supported:
            noise = f"; within the noise: {'; '.join(tied)}" if tied else ""
            return "; ".join(supported) + noise
        if tied:
            return f"the same order within the noise ({'; '.join(tied)})"
        return SAME_ORDER

    def single_text(self) -> pd.DataFrame:
        """The one-thread table as text: rank, decoder, images/s as ``610 (580-640)``, VERSUS."""
        return pd.DataFrame(
            {
                "rank": [str(r) for r in self.single["rank"]],
                "decoder": self.single["decoder"].astype(str),
                "images/s (95% interval)": cells(self.single, "images_per_s"),
                VERSUS: self.single[VERSUS].astype(str),
            },
            columns=["rank", "decoder", "images/s (95% interval)", VERSUS],
        )

    def in_loader_text(self) -> pd.DataFrame:
        """The in-loader table as text: rank, decoder, best, at workers, VERSUS, then each
        worker count, every figure as ``610 (580-640)``."""
        counts = [workers_column(c) for c in self.worker_counts]
        frame = self.in_loader
        table = pd.DataFrame(
            {
                "rank": [str(r) for r in frame["rank"]],
                "decoder": frame["decoder"].astype(str),
                "best": cells(frame, BEST),
                "at workers": [str(w) for w in frame["best_workers"]],
                VERSUS: frame[VERSUS].astype(str),
            },
            columns=["rank", "decoder", "best", "at workers", VERSUS],
        )
        for count in counts:
            table[count] = cells(frame, count)
        return table


def workers_column(workers: int) -> str:
    return "1 worker" if workers == 1 else f"{workers} workers"


def interval_columns(column: str) -> tuple[str, str]:
    """The columns holding the 95% interval of ``column``'s figures."""
    return f"{column} low", f"{column} high"


def interval_at(frame: pd.DataFrame, index: int, column: str) -> Interval | None:
    """Row ``index``'s figure in ``column`` with its interval (None where not measured)."""
    low, high = interval_columns(column)
    values = [number(frame.at[index, c]) for c in (column, low, high)]
    if any(v is None for v in values):
        return None
    value, lo, hi = (float(v or 0.0) for v in values)
    return Interval(value, lo, hi)


def figure_text(interval: Interval | None) -> str:
    """``610 (580-640)``; empty where not measured."""
    return "" if interval is None else interval.short()


def cells(frame: pd.DataFrame, column: str) -> list[str]:
    return [figure_text(interval_at(frame, i, column)) for i in frame.index]


def tie(a: Interval | None, b: Interval | None) -> bool:
    """The measurements cannot tell ``a`` from ``b``: the 95% interval of the faster over the
    slower reaches 1.0 (``ties.equivalent_to_fastest``'s rule); no interval, no difference."""
    if a is None or b is None:
        return True
    faster, slower = (a, b) if a.value >= b.value else (b, a)
    r = ratio(faster, slower)
    return r is None or r.low <= 1.0


def standing(frame: pd.DataFrame, column: str) -> list[str]:
    """Each row (fastest first) against the first: "fastest", "tie" or "1.35x slower
    (1.28-1.42x)" (the interval of fastest/this)."""
    if frame.empty:
        return []
    fastest = interval_at(frame, frame.index[0], column)
    texts = ["fastest"]
    for index in frame.index[1:]:
        this = interval_at(frame, index, column)
        r = ratio(fastest, this) if fastest is not None and this is not None else None
        if r is None or r.low <= 1.0:
            texts.append("tie")
        else:
            texts.append(f"{r.factor:.2f}x slower ({r.low:.2f}-{r.high:.2f}x)")
    return texts


def _case_medians(rows: pd.DataFrame) -> dict[str, list[float]]:
    """Every run's median per case: a case's own spread from three runs on."""
    if rows.empty:
        return {}
    values = pd.to_numeric(rows["images_per_s_median"], errors="coerce").astype(float)
    return {
        str(case): [float(v) for v in group if math.isfinite(v)]
        for case, group in values.groupby(rows["case_id"].astype(str))
    }


def _interval(row: Row, stage: str, workers: int, medians: dict[str, list[float]]) -> Interval:
    """The answer's widening: the case's own runs' spread, else the stage's measured CV."""
    cv = own_cv(medians.get(str(row.get("case_id")), []))
    return row_interval(row, run_to_run_cv(stage, workers) if cv is None else cv)


def _is_single_thread(row: Row) -> bool:
    params = json_object(row.get("params_json"))
    return (
        row.get("stage") == "read"
        and params.get("codec", row.get("codec")) == CODEC
        and params.get("mode", row.get("mode")) == "memory"
        and number(params.get("threads")) == 1
        and not params.get("reduce")
        and "allocator" not in params
    )


def _is_plain_pipeline(row: Row) -> bool:
    params = json_object(row.get("params_json"))
    return (
        row.get("stage") == "loader"
        and not is_experiment(row)
        and not is_decode_only(row)
        and "+" not in str(row.get("variant") or "")
        and params.get("format") == FILES
        and params.get("storage", "local") == "local"
        and "allocator" not in params
        and bool(params.get("decoder"))
    )


def single_thread_ranking(rows: pd.DataFrame) -> pd.DataFrame:
    """Decoders on one thread, fastest first: decoder, images_per_s, rank, its interval
    (``interval_columns``) widened by the read stage's CV, and VERSUS."""
    low, high = interval_columns("images_per_s")
    columns = ["decoder", "images_per_s", "rank", low, high, VERSUS]
    chosen = newest_per_case(rows[where(rows, _is_single_thread)]) if not rows.empty else rows
    if chosen.empty:
        return pd.DataFrame(columns=columns)
    medians = _case_medians(rows)
    records = []
    for row in chosen.to_dict("records"):
        interval = _interval(row, "read", 1, medians)
        decoder = f"{row['library']}/{row['variant']}"
        records.append((decoder, interval.value, interval.low, interval.high))
    frame = pd.DataFrame(records, columns=["decoder", "images_per_s", low, high])
    frame = frame.sort_values("images_per_s", ascending=False, kind="stable")
    frame = frame.drop_duplicates("decoder")  # several rows of one decoder: its fastest
    ranked = _ranked(frame, "images_per_s")
    return ranked.assign(**{VERSUS: standing(ranked, "images_per_s")})[columns]


def _ranked(frame: pd.DataFrame, column: str) -> pd.DataFrame:
    frame = frame.sort_values([column, "decoder"], ascending=[False, True], kind="stable")
    return frame.assign(rank=range(1, len(frame) + 1)).reset_index(drop=True)


def _loader_rows(rows: pd.DataFrame) -> tuple[pd.DataFrame, tuple[str, str, int | None]]:
    """The plain pipeline rows of the loader group with the most decoders, and its key."""
    plain = newest_per_case(rows[where(rows, _is_plain_pipeline)]) if not rows.empty else rows
    if plain.empty:
        return plain, ("", "", None)
    params = [json_object(p) for p in plain["params_json"]]
    plain = plain.assign(
        decoder=[str(p.get("decoder")) for p in params],
        pipeline=[str(p.get("pipeline") or "") for p in params],
        batch=[int(number(p.get("batch_size")) or 0) for p in params],
        workers_n=[int(number(w) or 0) for w in plain["workers"]],
    )
    sizes = plain.groupby(["library", "pipeline", "batch"])["decoder"].nunique()
    key = max(sizes.index, key=lambda k: (sizes[k], k[0] == REFERENCE_LOADER, k))
    library, pipeline, batch = key
    group = plain[
        (plain["library"] == library) & (plain["pipeline"] == pipeline) & (plain["batch"] == batch)
    ]
    return group, (str(library), str(pipeline), int(batch) or None)


def _figure_columns(column: str, interval: Interval | None) -> dict[str, object]:
    """``column`` and its interval's columns for one figure (NaN where not measured)."""
    low, high = interval_columns(column)
    if interval is None:
        return {column: math.nan, low: math.nan, high: math.nan}
    return {column: interval.value, low: interval.low, high: interval.high}


def in_loader_ranking(
    group: pd.DataFrame, medians: dict[str, list[float]] | None = None
) -> tuple[pd.DataFrame, list[int]]:
    """Decoders inside the loader, best first: decoder, best_images_per_s, best_workers, rank,
    VERSUS, and images/s at each worker count (a column per count), each figure with its
    interval widened by the loader's CV at its worker count; and the counts."""
    base = ["decoder", BEST, "best_workers", "rank", VERSUS]
    if group.empty:
        return pd.DataFrame(columns=[*base, *interval_columns(BEST)]), []
    medians = medians if medians is not None else _case_medians(group)
    figures: dict[str, dict[int, Interval]] = {}
    for row in group.to_dict("records"):
        workers = int(row["workers_n"])
        interval = _interval(row, "loader", workers, medians)
        held = figures.setdefault(str(row["decoder"]), {}).get(workers)
        if held is None or interval.value > held.value:  # several rows: the fastest
            figures[str(row["decoder"])][workers] = interval
    counts = sorted({w for by_workers in figures.values() for w in by_workers})
    records = []
    for decoder, by_workers in figures.items():
        best_workers = max(by_workers, key=lambda w: (by_workers[w].value, -w))
        record: dict[str, object] = {"decoder": decoder, "best_workers": best_workers}
        record |= _figure_columns(BEST, by_workers[best_workers])
        for count in counts:
            record |= _figure_columns(workers_column(count), by_workers.get(count))
        records.append(record)
    frame = _ranked(pd.DataFrame(records), BEST)
    frame[VERSUS] = standing(frame, BEST)
    shown = [workers_column(c) for c in counts]
    extra = [c for column in [BEST, *shown] for c in interval_columns(column)]
    return frame[[*base, *shown, *extra]], counts


def _place_changes(
    single: pd.DataFrame, in_loader: pd.DataFrame, counts: list[int]
) -> Iterator[tuple[str, str, bool]]:
    """(label, line, supported) for each decoder whose place among those measured both ways
    differs, per in-loader column (the best, then each worker count). Supported: it swapped
    places with a decoder from which it differs beyond the noise in both rankings."""
    common = set(single["decoder"]) & set(in_loader["decoder"])
    if len(common) < 2:
        return
    one = single[single["decoder"].isin(common)].sort_values("rank")
    thread_place = {d: i + 1 for i, d in enumerate(one["decoder"])}
    thread_interval = {d: interval_at(one, i, "images_per_s") for i, d in one["decoder"].items()}
    columns = {"best over worker counts": BEST} | {
        workers_column(c): workers_column(c) for c in counts
    }
    for label, column in columns.items():
        rows = in_loader[in_loader["decoder"].isin(common)].dropna(subset=[column])
        rows = rows.sort_values([column, "decoder"], ascending=[False, True], kind="stable")
        if len(rows) < 2:
            continue
        yield label, "", False  # the column has an order: an empty list says "the same"
        place = {d: i + 1 for i, d in enumerate(rows["decoder"])}
        loader_interval = {d: interval_at(rows, i, column) for i, d in rows["decoder"].items()}
        ahead = {d: {e for e in place if thread_place[e] < thread_place[d]} for d in place}
        for decoder in place:
            if place[decoder] == thread_place[decoder]:
                continue
            swapped = [
                other
                for other in place
                if other != decoder and (other in ahead[decoder]) != (place[other] < place[decoder])
            ]
            beyond = [
                other
                for other in swapped
                if not tie(thread_interval[decoder], thread_interval[other])
                and not tie(loader_interval[decoder], loader_interval[other])
            ]
            line = (
                f"{decoder}: {ordinal(thread_place[decoder])} on one thread, "
                f"{ordinal(place[decoder])} in the loader"
            )
            if not beyond:
                line += f" (ties with {', '.join(sorted(swapped))})"
            yield label, line, bool(beyond)


def order_differences(
    single: pd.DataFrame, in_loader: pd.DataFrame, counts: list[int], supported: bool = True
) -> dict[str, list[str]]:
    """Per in-loader column (the best, then each worker count): a line for each decoder whose
    place among the decoders measured both ways differs from its place on one thread, where the
    measurements support it (``supported=False``: the changes between decoders that tie)."""
    result: dict[str, list[str]] = {}
    for label, line, beyond in _place_changes(single, in_loader, counts):
        lines = result.setdefault(label, [])
        if line and beyond == supported:
            lines.append(line)
    return result


def _label(rows: pd.DataFrame, column: str, detail: str) -> str:
    first = rows.iloc[0]
    value, extra = first.get(column), first.get(detail)
    value = value if isinstance(value, str) and value else "?"
    return f"{value} · {extra}" if isinstance(extra, str) and extra else value


def decoder_rankings(frame: pd.DataFrame) -> list[DecoderRanking]:
    """One ranking per machine and dataset where a loader ran two decoders or more."""
    result = []
    for rows in by_machine_and_dataset(frame):
        group, (loader, pipeline, batch) = _loader_rows(rows)
        if group.empty or group["decoder"].nunique() < 2:
            continue  # one decoder in any loader: no decoder supply ran on this data
        single = single_thread_ranking(rows)
        in_loader, counts = in_loader_ranking(group, _case_medians(rows))
        result.append(
            DecoderRanking(
                machine=_label(rows, "hostname", "machine_id"),
                dataset=_label(rows, "dataset_name", "dataset_fingerprint"),
                loader=loader,
                pipeline=pipeline,
                batch_size=batch,
                single=single,
                in_loader=in_loader,
                worker_counts=counts,
                differences=order_differences(single, in_loader, counts),
                ties=order_differences(single, in_loader, counts, supported=False),
            )
        )
    return result
