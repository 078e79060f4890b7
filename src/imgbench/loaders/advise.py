"""``imgbench advise --target IMAGES_PER_S``: which measured loader configurations feed that rate.

Reads loader rows (status ok, steady state: no emulated compute step, not the memory
experiment), keeps the latest row of each configuration measured on this machine (all machines
when this one has none), and lists those that reach the target, fewest workers and least memory
first. For each it names the stage that limits it: the slowest per-image stage, or the cost of
moving batches between processes when the workers' work does not account for the wall time.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import pandas as pd
import typer
from rich.console import Console
from rich.table import Table

OVERHEAD_LIMITED = 0.6  # below this parallel efficiency, the hand-over between processes limits


@dataclass(frozen=True)
class Advice:
    reaching: pd.DataFrame  # configurations at or above the target, best first
    others: pd.DataFrame  # the rest, fastest first
    machine_note: str


def _extra(text: Any) -> dict[str, Any]:
    if not isinstance(text, str) or not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _params(text: Any) -> dict[str, Any]:
    return _extra(text)


def loader_configurations(frame: pd.DataFrame) -> pd.DataFrame:
    """Latest ok steady-state row per configuration, with memory and stage facts unpacked."""
    rows = frame[(frame["stage"] == "loader") & (frame["status"] == "ok")].copy()
    if rows.empty:
        return rows
    params = rows["params_json"].map(_params)
    extra = rows["extra_json"].map(_extra)
    steady = ~params.map(lambda p: "accelerator_images_per_s" in p) & (
        rows["library"] != "cow-experiment"
    )
    rows, params, extra = rows[steady], params[steady], extra[steady]
    if rows.empty:
        return rows
    rows = rows.assign(
        workers_n=pd.to_numeric(rows["workers"], errors="coerce").fillna(0).astype(int),
        memory_bytes=[
            e.get("peak_pss_bytes") or r for e, r in zip(extra, rows["peak_rss_bytes"], strict=True)
        ],
        bottleneck=[limiting_stage(e) for e in extra],
        pipeline=[
            e.get("pipeline") or p.get("pipeline") for e, p in zip(extra, params, strict=True)
        ],
        pipeline_s_per_image=[e.get("pipeline_s_per_image") for e in extra],
    )
    rows = rows.sort_values("created_utc").groupby("case_id", as_index=False).tail(1)
    return rows


def limiting_stage(extra: dict[str, Any]) -> str:
    times: dict[str, float] = extra.get("stage_times_s") or {}
    if not times:
        return "unknown (no stage times)"
    stage = max(times, key=times.__getitem__)
    text = f"{stage} {1e3 * times[stage]:.2f} ms/img"
    efficiency = extra.get("parallel_efficiency")
    if isinstance(efficiency, int | float) and efficiency < OVERHEAD_LIMITED:
        text = (
            f"hand-over between processes (workers busy {efficiency:.0%} of the time); "
            f"slowest stage {text}"
        )
    return text


def advise(
    frame: pd.DataFrame, target: float, machine_id: str | None, pipeline: str | None = None
) -> Advice:
    """``pipeline``: a substring of the pipeline label to keep; by default every pipeline that
    augments (the decode-only pass-through is not what a training job runs)."""
    rows = loader_configurations(frame)
    if not rows.empty:
        labels = rows["pipeline"].fillna("").astype(str)
        keep = (
            labels.str.contains(pipeline, regex=False)
            if pipeline
            else ~labels.str.endswith("> none")
        )
        rows = rows[keep]
    if rows.empty:
        return Advice(rows, rows, "no loader rows")
    note = "all machines in the results"
    if machine_id is not None and not rows.empty and (rows["machine_id"] == machine_id).any():
        rows = rows[rows["machine_id"] == machine_id]
        note = f"this machine ({machine_id})"
    elif not rows.empty:
        note = "other machines (none of these rows was measured here)"
    reaching = rows[rows["images_per_s_median"] >= target].sort_values(
        ["workers_n", "memory_bytes", "images_per_s_median"], ascending=[True, True, False]
    )
    others = rows[rows["images_per_s_median"] < target].sort_values(
        "images_per_s_median", ascending=False
    )
    return Advice(reaching, others, note)


def workers_needed(pipeline_s_per_image: float | None, target: float) -> int | None:
    """Workers a perfectly parallel loader would need: the pipeline's work over the target period."""
    if not pipeline_s_per_image:
        return None
    return math.ceil(pipeline_s_per_image * target)


def _batch(row: pd.Series) -> str:  # "32", not "32.0" (the column is float where rows lack it)
    size = row["batch_size"]
    return str(int(size)) if isinstance(size, int | float) and size == size else "?"


def _config_label(row: pd.Series) -> str:
    return f"{row['library']} · {row['variant']} · batch {_batch(row)}"


def _table(rows: pd.DataFrame, title: str) -> Table:
    """Narrow enough for 80 columns: the variant folds onto its own line instead of being cut."""
    table = Table(title=title, title_justify="left")
    table.add_column("loader · pipeline · batch", overflow="fold", min_width=30, ratio=1)
    table.add_column("wk", justify="right")
    table.add_column("img/s", justify="right")
    table.add_column("PSS MB", justify="right")
    table.add_column("limited by", overflow="fold")
    for _, row in rows.iterrows():
        memory = row["memory_bytes"]
        table.add_row(
            _config_label(row),
            str(row["workers_n"]),
            f"{row['images_per_s_median']:,.0f}",
            f"{memory / 1e6:,.0f}" if isinstance(memory, int | float) and memory == memory else "?",
            row["bottleneck"],
        )
    return table


def advise_command(
    target: Annotated[float, typer.Option("--target", help="images/s the training job needs")],
    results: Annotated[
        Path, typer.Option("--results", help="folder or parquet file of results")
    ] = Path("results"),
    show: Annotated[int, typer.Option(help="configurations to list at most")] = 10,
    pipeline: Annotated[
        str | None,
        typer.Option(help="only pipelines whose label contains this, e.g. 'torchvision' or 'lmdb'"),
    ] = None,
) -> None:
    """Which loader configurations reach a target images/s on this machine, and what limits them."""
    from imgbench.machine import machine_info
    from imgbench.results.store import load_results

    console = Console()
    if target <= 0:
        raise typer.BadParameter("must be > 0", param_hint="--target")
    if not results.exists():
        Console(stderr=True).print(f"[bold red]error:[/] no results at {results}")
        raise typer.Exit(2)
    frame = load_results(results).frame
    advice = advise(frame, target, machine_info().machine_id, pipeline)
    if advice.reaching.empty and advice.others.empty:
        Console(stderr=True).print(
            f"[bold red]error:[/] no loader rows in {results}"
            + (f" for pipeline {pipeline!r}" if pipeline else "")
            + ": run `imgbench run -k loader` first"
        )
        raise typer.Exit(2)
    console.print(f"Target {target:,.0f} images/s; rows from {advice.machine_note}.")
    if not advice.reaching.empty:
        best = advice.reaching.iloc[0]
        console.print(
            f"[green]{len(advice.reaching)} configuration(s) reach it.[/] Fewest workers and least "
            f"memory: {_config_label(best)} with {best['workers_n']} workers "
            f"({best['images_per_s_median']:,.0f} images/s)."
        )
        console.print(_table(advice.reaching.head(show), "Reaching the target"))
        return
    best = advice.others.iloc[0]
    needed = workers_needed(best["pipeline_s_per_image"], target)
    cores = os.cpu_count() or 1
    console.print(
        f"[red]No configuration reaches {target:,.0f} images/s here.[/] The fastest is "
        f"{_config_label(best)} with {best['workers_n']} workers at "
        f"{best['images_per_s_median']:,.0f} images/s, limited by {best['bottleneck']}."
    )
    if needed is not None:
        console.print(
            f"Its pipeline costs {1e3 * best['pipeline_s_per_image']:.2f} ms of work per image: "
            f"about {needed} busy cores at perfect scaling; this machine has {cores}."
        )
    console.print(_table(advice.others.head(show), "Fastest configurations"))
