"""``imgbench advise --target IMAGES_PER_S``: which measured loader configurations feed that rate;
``--cores N [--step-rate R]``: the pick and the common default at N cores, a prediction or a bound
(``imgbench.answer.scaling``), and the cores a step of R images/s needs.

Reads loader rows (status ok, steady state: no emulated compute step, not the memory
experiment), keeps the latest row of each configuration measured on this machine (all machines
when this one has none), and lists those that reach the target, fewest workers and least memory
first. For each it names the stage that limits it: the slowest per-image stage, or the cost of
moving batches between processes when the workers' work does not account for the wall time.

When the rows include the allocator dimension (the allocator sessions of ``imgbench run --profile
default``), it also recommends an allocator per stage (read, augment, loader) where one pays: the
same case measured under glibc and under another allocator (matched on the case_id without its
``allocator=NAME`` parameter), the other faster by at least ``MIN_ALLOCATOR_GAIN`` and beyond the
rows' own noise (its slow quartile above glibc's fast quartile), with the variables that apply it.
It says nothing about allocators otherwise.
"""

from __future__ import annotations

import math
import numbers
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import pandas as pd
import typer
from rich.console import Console
from rich.table import Table

from imgbench.measure import allocator as allocators
from imgbench.measure.allocator import GLIBC_TUNED, AllocatorUnavailableError
from imgbench.results.schema import json_object

OVERHEAD_LIMITED = 0.6  # below this parallel efficiency, the hand-over between processes limits
MIN_ALLOCATOR_GAIN = 1.05  # a smaller gain is not worth changing a training job's environment
ALLOCATOR_STAGES = ("read", "augment", "loader")  # what a loader's workers do, step by step
BASELINE_ALLOCATOR = "glibc"
# Debian's packages for the preloaded allocators, named when the library is not installed here
PRELOAD_PACKAGES = {
    "jemalloc": ("libjemalloc.so.2", "libjemalloc2"),
    "tcmalloc": ("libtcmalloc_minimal.so.4", "libtcmalloc-minimal4"),
}
_ALLOCATOR_PARAM = re.compile(r"(?<=\[)allocator=[^,\]]*,?|,allocator=[^,\]]*")


@dataclass(frozen=True)
class AllocatorGain:
    """The allocator that pays most in one stage, on its best case, against glibc."""

    stage: str
    allocator: str
    factor: float  # images/s under ``allocator`` over images/s under glibc, same case
    images_per_s: float
    glibc_images_per_s: float
    case: str  # the case it was measured on
    faster: int  # the stage's cases where this allocator beats glibc beyond noise
    slower: int  # ... where it is slower than glibc beyond noise
    cases: int  # the stage's cases measured under both
    recorded_env: dict[str, str]  # the allocator_env its row recorded (for "custom")


@dataclass(frozen=True)
class Advice:
    reaching: pd.DataFrame  # configurations at or above the target, best first
    others: pd.DataFrame  # the rest, fastest first
    machine_note: str
    allocator_gains: tuple[AllocatorGain, ...] = field(default=())
    too_big: pd.DataFrame | None = None  # reach the target, but their summed PSS exceeds RAM
    au_rows: pd.DataFrame | None = None  # the loader feeding an emulated accelerator
    answer: Any = None  # imgbench.answer's Answer for these rows' machine and dataset
    # imgbench.answer.tasks: the short answer per task beyond classification, these machines
    task_answers: tuple[Any, ...] = field(default=())


def loader_configurations(frame: pd.DataFrame) -> pd.DataFrame:
    """Latest ok steady-state row per configuration, with memory and stage facts unpacked:
    classification rows only (a segmentation or crop-ocr row is other work: its own answer), no
    disk session's cold rows (the disk advice's)."""
    from imgbench.answer.rows import is_classification, is_disk_pass, where

    rows = frame[(frame["stage"] == "loader") & (frame["status"] == "ok")].copy()
    if rows.empty:
        return rows
    rows = rows[where(rows, lambda r: is_classification(r) and not is_disk_pass(r))]
    if rows.empty:
        return rows
    params = rows["params_json"].map(json_object)
    extra = rows["extra_json"].map(json_object)
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
        allocator_param=[p.get("allocator") for p in params],
        worker_pss_bytes=[e.get("worker_pss_bytes_mean") for e in extra],
        main_pss_bytes=[(e.get("final_pss_bytes") or {}).get("main") for e in extra],
    )
    ram = pd.to_numeric(rows["ram_bytes"], errors="coerce").astype(float)
    memory = pd.to_numeric(rows["memory_bytes"], errors="coerce").astype(float)
    rows = rows.assign(
        headroom_bytes=(ram - memory).to_numpy(),
        # False only when both are known and the processes' summed PSS exceeds the RAM
        fits=~((memory > ram).to_numpy(dtype=bool, na_value=False)),
        ram_n=ram.to_numpy(),
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


def _pipelines(rows: pd.DataFrame, pipeline: str | None) -> pd.DataFrame:
    """Loader rows of the pipelines asked for: those whose label contains ``pipeline``, by
    default every pipeline that augments (the decode-only pass-through is not a training job)."""
    if rows.empty:
        return rows
    labels = rows["pipeline"].fillna("").astype(str)
    keep = (
        labels.str.contains(pipeline, regex=False) if pipeline else ~labels.str.endswith("> none")
    )
    return rows[keep]


def advise(
    frame: pd.DataFrame, target: float, machine_id: str | None, pipeline: str | None = None
) -> Advice:
    """``pipeline``: a substring of the pipeline label to keep; by default every pipeline that
    augments (the decode-only pass-through is not what a training job runs)."""
    rows = _pipelines(loader_configurations(frame), pipeline)
    if rows.empty:
        return Advice(rows, rows, "no loader rows")
    note = "all machines in the results"
    if machine_id is not None and not rows.empty and (rows["machine_id"] == machine_id).any():
        rows = rows[rows["machine_id"] == machine_id]
        note = f"this machine ({machine_id})"
    elif not rows.empty:
        note = "other machines (none of these rows was measured here)"
    fast = (rows["images_per_s_median"] >= target).to_numpy(dtype=bool, na_value=False)
    fits = rows["fits"].to_numpy(dtype=bool)
    reaching = rows[fast & fits].sort_values(
        ["workers_n", "memory_bytes", "images_per_s_median"], ascending=[True, True, False]
    )
    others = rows[~fast].sort_values("images_per_s_median", ascending=False)
    return Advice(
        reaching,
        others,
        note,
        tuple(allocator_gains(frame, machine_id, pipeline)),
        too_big=rows[fast & ~fits],
        au_rows=au_rows(frame, set(rows["machine_id"].astype(str))),
        answer=_answer_for(frame, set(rows["machine_id"].astype(str))),
        task_answers=_task_answers_for(frame, set(rows["machine_id"].astype(str))),
    )


def au_rows(frame: pd.DataFrame, machines: set[str]) -> pd.DataFrame:
    """Ok loader rows with an emulated accelerator step: accelerator speed, AU, workers."""
    rows = frame[(frame["stage"] == "loader") & (frame["status"] == "ok")]
    rows = rows[rows["machine_id"].astype(str).isin(machines)]
    if rows.empty:
        return rows
    params, extra = rows["params_json"].map(json_object), rows["extra_json"].map(json_object)
    accelerator = [p.get("accelerator_images_per_s") for p in params]
    rows = rows.assign(
        accelerator_images_per_s=accelerator,
        au=[e.get("au") for e in extra],
        workers_n=pd.to_numeric(rows["workers"], errors="coerce").fillna(0).astype(int),
    )
    keep = [a is not None for a in accelerator]
    rows = rows[keep]
    return rows.sort_values("created_utc").groupby("case_id", as_index=False).tail(1)


def _answer_for(frame: pd.DataFrame, machines: set[str]) -> Any:
    """The shared answer (imgbench.answer) for the advised machine, newest dataset first."""
    from imgbench.answer import answers

    mine = frame[frame["machine_id"].astype(str).isin(machines)]
    return next((a for a in answers(mine) if a.best is not None), None)


def _task_answers_for(frame: pd.DataFrame, machines: set[str]) -> tuple[Any, ...]:
    """Each task beyond classification measured on the advised machine: its own short answer."""
    from imgbench.answer import task_answers

    return tuple(task_answers(frame[frame["machine_id"].astype(str).isin(machines)]))


def base_case_id(case_id: str) -> str:
    """The case_id without its ``allocator=NAME`` parameter: one case under every allocator."""
    return _ALLOCATOR_PARAM.sub("", case_id)


def spread(row: pd.Series) -> tuple[float, float] | None:
    """The row's own noise as images/s at its slow and fast quartile of rounds: the q1/q3
    columns, else the quartiles of ``samples_s``; None when the row has neither."""
    low, high = row.get("images_per_s_q1"), row.get("images_per_s_q3")
    if _number(low) and _number(high):
        return float(low), float(high)
    samples, images = row.get("samples_s"), row.get("images_per_round")
    if not hasattr(samples, "__len__") or not _number(images) or len(samples) < 2:
        return None
    slow, fast = pd.Series(samples, dtype=float).quantile([0.75, 0.25])
    if not (slow > 0 and fast > 0):
        return None
    return float(images) / slow, float(images) / fast


def _number(value: Any) -> bool:
    """A finite number, numpy's included (a row's int32 columns come back as numpy ints)."""
    return isinstance(value, numbers.Real) and math.isfinite(value)


def _case_label(row: pd.Series) -> str:
    label = f"{row['library']} · {row['variant']}"
    if row["stage"] == "read" and isinstance(row.get("codec"), str):
        threads = row.get("threads")
        label += f" · {row['codec']}"
        if _number(threads):
            label += " · 1 thread" if threads == 1 else f" · {int(threads)} threads"
    if row["stage"] == "loader":
        workers = row.get("workers_n")
        label += f" · {int(workers) if _number(workers) else 0} workers"
    return label


def _allocator_rows(
    frame: pd.DataFrame, machine_id: str | None, pipeline: str | None
) -> pd.DataFrame:
    """Ok rows of the stages an allocator setting applies to, with the allocator recorded: the
    latest row per case and allocator, of this machine where it has any."""
    if "allocator" not in frame or frame["allocator"].dropna().nunique() < 2:
        return frame.iloc[:0]
    ok = frame[(frame["status"] == "ok") & frame["allocator"].notna()]
    loaders = _pipelines(loader_configurations(ok), pipeline)  # steady state, as above
    others = ok[ok["stage"].isin([s for s in ALLOCATOR_STAGES if s != "loader"])]
    rows = pd.concat([others, loaders], ignore_index=True)
    rows = rows[rows["images_per_s_median"].notna()]
    if machine_id is not None and (rows["machine_id"] == machine_id).any():
        rows = rows[rows["machine_id"] == machine_id]
    if rows.empty:
        return rows
    key = [rows[c].fillna("?").astype(str) for c in ("stage", "environment", "machine_id")]
    key.append(rows["dataset_fingerprint"].fillna("?").astype(str))
    key.append(rows["case_id"].fillna("").astype(str).map(base_case_id))
    rows = rows.assign(
        base_key=pd.concat(key, axis=1).agg("|".join, axis=1),
        allocator=rows["allocator"].astype(str),
    )
    return rows.sort_values("created_utc").groupby(["base_key", "allocator"]).tail(1)


@dataclass(frozen=True)
class _Comparison:
    """One case under another allocator against the same case under glibc."""

    allocator: str
    row: pd.Series
    glibc: pd.Series
    factor: float
    faster: bool  # beyond noise: its slow quartile above glibc's fast quartile
    slower: bool  # beyond noise: its fast quartile below glibc's slow quartile


def _compare(row: pd.Series, name: str, glibc: pd.Series) -> _Comparison:
    factor = float(row["images_per_s_median"]) / float(glibc["images_per_s_median"])
    mine, theirs = spread(row), spread(glibc)
    if mine is None or theirs is None:  # no noise known: no claim either way
        return _Comparison(name, row, glibc, factor, faster=False, slower=False)
    return _Comparison(name, row, glibc, factor, mine[0] > theirs[1], mine[1] < theirs[0])


def allocator_gains(
    frame: pd.DataFrame, machine_id: str | None, pipeline: str | None = None
) -> list[AllocatorGain]:
    """Per stage, the allocator with the largest gain over glibc on one case, if that gain is at
    least ``MIN_ALLOCATOR_GAIN`` and beyond noise; stages where none pays are left out."""
    rows = _allocator_rows(frame, machine_id, pipeline)
    if rows.empty:
        return []
    comparisons: list[_Comparison] = []
    for _, case in rows.groupby("base_key"):
        by_name = {str(r["allocator"]): r for _, r in case.iterrows()}
        glibc = by_name.pop(BASELINE_ALLOCATOR, None)
        if glibc is None:
            continue
        for name, row in by_name.items():
            comparisons.append(_compare(row, name, glibc))
    gains = []
    for stage in ALLOCATOR_STAGES:
        mine = [c for c in comparisons if c.row["stage"] == stage]
        paying = [c for c in mine if c.faster and c.factor >= MIN_ALLOCATOR_GAIN]
        if not paying:
            continue
        best = max(paying, key=lambda c: c.factor)
        same = [c for c in mine if c.allocator == best.allocator]
        recorded = json_object(best.row.get("allocator_env"))
        gains.append(
            AllocatorGain(
                stage=stage,
                allocator=best.allocator,
                factor=best.factor,
                images_per_s=float(best.row["images_per_s_median"]),
                glibc_images_per_s=float(best.glibc["images_per_s_median"]),
                case=_case_label(best.row),
                faster=sum(c.faster for c in same),
                slower=sum(c.slower for c in same),
                cases=len(same),
                recorded_env={str(k): str(v) for k, v in recorded.items()},
            )
        )
    return gains


def allocator_settings(name: str, recorded: dict[str, str]) -> tuple[str, dict[str, str]]:
    """(how to read it, variables to export) for an allocator setting."""
    if name == "glibc-tuned":
        return "set before Python starts (DataLoader workers inherit them)", dict(GLIBC_TUNED)
    if name in PRELOAD_PACKAGES:
        file_name, package = PRELOAD_PACKAGES[name]
        try:
            environment = allocators.allocator(name).environment
        except AllocatorUnavailableError:
            return (
                f"apt-get install {package} (not installed here), then preload it",
                {"LD_PRELOAD": file_name},
            )
        return "preload it before Python starts (workers inherit it)", dict(environment)
    if recorded:
        return "the variables its rows recorded", dict(recorded)
    return "its rows recorded no allocator variables", {}


def workers_needed(pipeline_s_per_image: float | None, target: float) -> int | None:
    """Workers a perfectly parallel loader would need: the pipeline's work over the target period."""
    if not pipeline_s_per_image:
        return None
    return math.ceil(pipeline_s_per_image * target)


def _batch(row: pd.Series) -> str:  # "32", not "32.0" (the column is float where rows lack it)
    size = row["batch_size"]
    return str(int(size)) if _number(size) else "?"


def _config_label(row: pd.Series) -> str:
    label = f"{row['library']} · {row['variant']} · batch {_batch(row)}"
    allocator = row.get("allocator_param")
    return f"{label} · {allocator}" if isinstance(allocator, str) else label


def headroom_text(row: pd.Series) -> str:
    """RAM the configuration leaves free: GB and share of the machine's RAM."""
    headroom, ram = row.get("headroom_bytes"), row.get("ram_n")
    if not _number(headroom) or not _number(ram) or not ram:
        return "?"
    return f"{headroom / 1e9:,.1f} GB {headroom / ram:.0%}"


def estimated_pss(row: pd.Series, workers: int) -> float | None:
    """Summed PSS at ``workers``: the main process's plus ``workers`` times the measured mean
    per worker (the row's own ``final_pss_bytes`` and ``worker_pss_bytes_mean``)."""
    main, worker = row.get("main_pss_bytes"), row.get("worker_pss_bytes")
    if not _number(main) or not _number(worker):
        return None
    return float(main) + workers * float(worker)


def _table(rows: pd.DataFrame, title: str) -> Table:
    """Narrow enough for 80 columns: the variant folds onto its own line instead of being cut."""
    table = Table(title=title, title_justify="left")
    table.add_column("loader · pipeline · batch", overflow="fold", min_width=30, ratio=1)
    table.add_column("wk", justify="right")
    table.add_column("img/s", justify="right")
    table.add_column("PSS MB", justify="right")
    table.add_column("RAM left", justify="right")
    table.add_column("limited by", overflow="fold")
    for _, row in rows.iterrows():
        memory = row["memory_bytes"]
        table.add_row(
            _config_label(row),
            str(row["workers_n"]),
            f"{row['images_per_s_median']:,.0f}",
            f"{memory / 1e6:,.0f}" if isinstance(memory, int | float) and memory == memory else "?",
            headroom_text(row),
            row["bottleneck"],
        )
    return table


def advise_command(
    target: Annotated[
        float | None, typer.Option("--target", help="images/s the training job needs")
    ] = None,
    results: Annotated[
        Path, typer.Option("--results", help="folder or parquet file of results")
    ] = Path("results"),
    show: Annotated[int, typer.Option(help="configurations to list at most")] = 10,
    pipeline: Annotated[
        str | None,
        typer.Option(help="only pipelines whose label contains this, e.g. 'torchvision' or 'lmdb'"),
    ] = None,
    cores: Annotated[
        int | None,
        typer.Option(
            "--cores",
            help="the pick's and the common default's images/s at this many cores: a USL "
            "prediction, or a bound where the rows cannot fit one",
        ),
    ] = None,
    step_rate: Annotated[
        float | None,
        typer.Option(
            "--step-rate", help="images/s a training step takes: the cores needed to keep it busy"
        ),
    ] = None,
    ranks: Annotated[
        int,
        typer.Option(
            "--ranks",
            help="training ranks (one loader per GPU) sharing the cores: the cores divided "
            "among them (with --cores or --step-rate)",
        ),
    ] = 1,
) -> None:
    """Which loader configurations reach a target images/s on this machine, and what limits them;
    with --cores, what the rows say about a machine with that many cores."""
    from imgbench.results.store import load_results

    if target is None and cores is None and step_rate is None:
        raise typer.BadParameter("give --target, --cores or --step-rate", param_hint="--target")
    checked = (
        (target, "--target"),
        (cores, "--cores"),
        (step_rate, "--step-rate"),
        (ranks, "--ranks"),
    )
    for value, hint in checked:
        if value is not None and value <= 0:
            raise typer.BadParameter("must be > 0", param_hint=hint)
    if not results.exists():
        Console(stderr=True).print(f"[bold red]error:[/] no results at {results}")
        raise typer.Exit(2)
    frame = load_results(results).frame
    console = Console()
    if target is not None:
        _print_target(console, frame, target, results, show, pipeline)
    if cores is not None or step_rate is not None:
        _print_scaling(console, frame, results, cores, step_rate, ranks)


def _print_scaling(
    console: Console,
    frame: pd.DataFrame,
    results: Path,
    cores: int | None,
    step_rate: float | None,
    ranks: int = 1,
) -> None:
    """The pick and the common default at ``cores`` cores, and the cores ``step_rate`` needs."""
    from imgbench.answer.scaling import scaling_lines
    from imgbench.machine import machine_info

    lines = scaling_lines(frame, machine_info().machine_id, cores, step_rate, ranks)
    if lines is None:
        Console(stderr=True).print(
            f"[bold red]error:[/] no loader answer in {results}: run `imgbench run -k loader` first"
        )
        raise typer.Exit(2)
    for line in lines:
        console.print(line, markup=False, highlight=False)


def _print_target(
    console: Console,
    frame: pd.DataFrame,
    target: float,
    results: Path,
    show: int,
    pipeline: str | None,
) -> None:
    """The configurations that reach ``target`` (``imgbench advise --target``)."""
    from imgbench.machine import machine_info

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
        _print_beside(console, advice, target, frame)
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
        pss, ram = estimated_pss(best, needed), best.get("ram_n")
        if pss is not None and _number(ram):
            verdict = (
                "more than this machine's RAM: not advised even with the cores"
                if pss > ram
                else f"leaving {(ram - pss) / 1e9:,.1f} GB of RAM"
            )
            console.print(
                f"{needed} of its workers would hold about {pss / 1e9:,.1f} GB PSS together "
                f"(measured per worker), {verdict}."
            )
    console.print(_table(advice.others.head(show), "Fastest configurations"))
    _print_beside(console, advice, target, frame)


def _print_beside(console: Console, advice: Advice, target: float, frame: pd.DataFrame) -> None:
    """What a target's answer prints after its table: memory, AU, the answer, allocators, disks."""
    _print_memory_rule(console, advice)
    _print_au(console, advice, target)
    _print_answer(console, advice)
    _print_allocators(console, advice.allocator_gains)
    _print_disks(console, frame)


def _print_disks(console: Console, frame: pd.DataFrame) -> None:
    """Per measured disk: the format and workers to pick, and whether packing pays off there."""
    from imgbench.answer.disk_advice import disk_advice

    for disk in disk_advice(frame):
        for line in disk.lines():
            console.print(line)


def _print_memory_rule(console: Console, advice: Advice) -> None:
    """Configurations fast enough whose processes' summed PSS exceeds the machine's RAM."""
    if advice.too_big is None or advice.too_big.empty:
        return
    console.print(
        f"[yellow]Not advised: {len(advice.too_big)} configuration(s) reach the target but their "
        "processes' summed PSS exceeds the machine's RAM:[/]"
    )
    for _, row in advice.too_big.iterrows():
        console.print(
            f"  {_config_label(row)} with {row['workers_n']} workers: "
            f"{row['memory_bytes'] / 1e9:,.1f} GB PSS, RAM {row['ram_n'] / 1e9:,.1f} GB",
            highlight=False,
            markup=False,
        )


def _print_au(console: Console, advice: Advice, target: float) -> None:
    """Measured accelerator utilisation, for emulated accelerators at least as fast as the target."""
    rows = advice.au_rows
    if rows is None or rows.empty:
        return
    fast = rows[pd.to_numeric(rows["accelerator_images_per_s"], errors="coerce") >= target]
    if fast.empty:
        top = pd.to_numeric(rows["accelerator_images_per_s"], errors="coerce").max()
        console.print(
            f"AU was measured for emulated accelerators up to {top:,.0f} images/s, below the "
            "target: no AU figure applies.",
            highlight=False,
        )
        return
    for _, row in fast.iterrows():
        au = row["au"]
        console.print(
            f"AU: {row['library']} with {row['workers_n']} workers kept an emulated "
            f"{row['accelerator_images_per_s']:,.0f} images/s accelerator "
            + (f"{au:.0%} busy" if _number(au) else "busy (AU not recorded)")
            + " (MLPerf Storage passes at 90%).",
            highlight=False,
        )


def _print_answer(console: Console, advice: Advice) -> None:
    """The same answer as the dashboard's Overview and `imgbench report`."""
    answer = advice.answer
    if answer is not None:
        console.print(
            f"The answer ({answer.title}): {answer.headline()}", highlight=False, markup=False
        )
        if answer.next_step:
            console.print(f"Next thing to try: {answer.next_step}.", highlight=False, markup=False)
    for task in advice.task_answers:  # other work than the target's rows: never compared
        console.print(
            f"For {task.title}: {task.headline()}", highlight=False, markup=False, soft_wrap=True
        )


def _print_allocators(console: Console, gains: tuple[AllocatorGain, ...]) -> None:
    """The allocator per stage that pays, and how to apply each one named (nothing if none)."""
    if not gains:
        return
    table = Table(
        title="Allocator: faster than glibc on the same case, beyond the rounds' spread",
        title_justify="left",
    )
    table.add_column("stage")
    table.add_column("allocator", overflow="fold")
    table.add_column("× glibc", justify="right")
    table.add_column("img/s", justify="right")
    table.add_column("best case; cases", overflow="fold", min_width=20, ratio=1)
    for gain in gains:
        cases = f"faster on {gain.faster} of {gain.cases}"
        if gain.slower:
            cases += f", slower on {gain.slower}"
        table.add_row(
            gain.stage,
            gain.allocator,
            f"{gain.factor:.2f}x",
            f"{gain.images_per_s:,.0f} vs {gain.glibc_images_per_s:,.0f}",
            f"{gain.case}; {cases}",
        )
    console.print(table)
    for name in dict.fromkeys(gain.allocator for gain in gains):
        recorded = next(g.recorded_env for g in gains if g.allocator == name)
        how, variables = allocator_settings(name, recorded)
        console.print(f"{name}: {how}:" if variables else f"{name}: {how}.", markup=False)
        for variable, value in variables.items():
            console.print(f"  export {variable}={value}", markup=False, highlight=False)
