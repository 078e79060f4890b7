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

Shared by the dashboard's Readers page and ``imgbench report``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from imgbench.answer.rows import (
    FILES,
    REFERENCE_LOADER,
    Row,
    by_machine_and_dataset,
    is_decode_only,
    is_experiment,
    number,
    where,
)
from imgbench.results.schema import json_object

CODEC = "jpeg"
SUPPLY_HINT = "`imgbench run -k loader` with the default profile (LoaderPlan.supply_decoders)"


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
    # decoder, images_per_s, rank (1 = fastest)
    single: pd.DataFrame
    # decoder, best_images_per_s, best_workers, rank, then one column per worker count
    in_loader: pd.DataFrame
    worker_counts: list[int] = field(default_factory=list)
    # "best over worker counts" and "N workers" -> lines naming each decoder whose place differs
    differences: dict[str, list[str]] = field(default_factory=dict)

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
        if not changed:
            return f"The {len(common)} decoders keep their single-thread order in the loader."
        return (
            f"The order of the {len(common)} decoders differs from one thread's "
            f"({', '.join(changed)})."
        )

    def common(self) -> list[str]:
        return sorted(set(self.single["decoder"]) & set(self.in_loader["decoder"]))


def workers_column(workers: int) -> str:
    return "1 worker" if workers == 1 else f"{workers} workers"


def _latest(rows: pd.DataFrame) -> pd.DataFrame:
    if rows.empty:
        return rows
    return rows.sort_values("created_utc", kind="stable").groupby("case_id").tail(1)


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
    """Decoders on one thread, fastest first: decoder, images_per_s, rank."""
    columns = ["decoder", "images_per_s", "rank"]
    chosen = _latest(rows[where(rows, _is_single_thread)]) if not rows.empty else rows
    if chosen.empty:
        return pd.DataFrame(columns=columns)
    frame = pd.DataFrame(
        {
            "decoder": chosen["library"].astype(str) + "/" + chosen["variant"].astype(str),
            "images_per_s": pd.to_numeric(chosen["images_per_s_median"]).astype(float),
        }
    )
    frame = frame.groupby("decoder", as_index=False)["images_per_s"].max()
    return _ranked(frame, "images_per_s")[columns]


def _ranked(frame: pd.DataFrame, column: str) -> pd.DataFrame:
    frame = frame.sort_values([column, "decoder"], ascending=[False, True], kind="stable")
    return frame.assign(rank=range(1, len(frame) + 1)).reset_index(drop=True)


def _loader_rows(rows: pd.DataFrame) -> tuple[pd.DataFrame, tuple[str, str, int | None]]:
    """The plain pipeline rows of the loader group with the most decoders, and its key."""
    plain = _latest(rows[where(rows, _is_plain_pipeline)]) if not rows.empty else rows
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


def in_loader_ranking(group: pd.DataFrame) -> tuple[pd.DataFrame, list[int]]:
    """Decoders inside the loader, best first: decoder, best_images_per_s, best_workers, rank,
    and images/s at each worker count (a column per count); and the counts."""
    base = ["decoder", "best_images_per_s", "best_workers", "rank"]
    if group.empty:
        return pd.DataFrame(columns=base), []
    values = group.assign(ips=pd.to_numeric(group["images_per_s_median"]).astype(float))
    table = values.pivot_table(index="decoder", columns="workers_n", values="ips", aggfunc="max")
    counts = sorted(int(c) for c in table.columns)
    best = table.max(axis=1)
    frame = pd.DataFrame(
        {
            "decoder": table.index.astype(str),
            "best_images_per_s": best.to_numpy(),
            "best_workers": table.idxmax(axis=1).astype(int).to_numpy(),
        }
    )
    for count in counts:
        frame[workers_column(count)] = table[count].to_numpy()
    ranked = _ranked(frame, "best_images_per_s")
    return ranked[[*base, *(workers_column(c) for c in counts)]], counts


def order_differences(
    single: pd.DataFrame, in_loader: pd.DataFrame, counts: list[int]
) -> dict[str, list[str]]:
    """Per in-loader column (the best, then each worker count): a line for each decoder whose
    place among the decoders measured both ways differs from its place on one thread."""
    common = set(single["decoder"]) & set(in_loader["decoder"])
    result: dict[str, list[str]] = {}
    if len(common) < 2:
        return result
    one = single[single["decoder"].isin(common)].sort_values("rank")
    thread_place = {d: i + 1 for i, d in enumerate(one["decoder"])}
    columns = {"best over worker counts": "best_images_per_s"} | {
        workers_column(c): workers_column(c) for c in counts
    }
    for label, column in columns.items():
        rows = in_loader[in_loader["decoder"].isin(common)].dropna(subset=[column])
        rows = rows.sort_values([column, "decoder"], ascending=[False, True], kind="stable")
        if len(rows) < 2:
            continue
        place = {d: i + 1 for i, d in enumerate(rows["decoder"])}
        result[label] = [
            f"{decoder}: {ordinal(thread_place[decoder])} on one thread, "
            f"{ordinal(place[decoder])} in the loader"
            for decoder in place
            if place[decoder] != thread_place[decoder]
        ]
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
        in_loader, counts = in_loader_ranking(group)
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
            )
        )
    return result
