"""``imgbench profile MODULE:FACTORY [--kw key=value ...]``: the sweep table, where the time goes,
the advice, and where the rows and the flame graph were written."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from imgbench.console import console, err, fail
from imgbench.profiling.advice import worker_uss_growth
from imgbench.profiling.attribution import CATEGORIES, CATEGORY_TITLES
from imgbench.profiling.keras import label as keras_label
from imgbench.profiling.result import Configuration, ProfileResult
from imgbench.profiling.step import load_step
from imgbench.profiling.sweep import ProfileSettings, profile
from imgbench.profiling.target import TargetError, build_target, parse_kwargs


def _workers(text: str | None) -> tuple[int, ...] | None:
    if text is None:
        return None
    try:
        counts = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise fail(
            f"--workers {text!r}: expected numbers separated by commas, e.g. 0,2,4"
        ) from None
    if not counts or min(counts) < 0:
        raise fail(f"--workers {text!r}: expected worker counts >= 0")
    return counts


def profile_command(
    target: Annotated[
        str,
        typer.Argument(
            help="MODULE:FACTORY returning a torch Dataset or DataLoader (or, with --env "
            "tensorflow, a tf.data.Dataset or a Keras PyDataset)"
        ),
    ],
    kw: Annotated[
        list[str] | None,
        typer.Option("--kw", help="key=value for the factory (Python literals or text); repeat"),
    ] = None,
    batch_size: Annotated[int, typer.Option(help="batch size for a Dataset")] = 32,
    workers: Annotated[
        str | None,
        typer.Option(
            help="worker counts, e.g. 0,2,4 (default 0..cores); tf.data: thread pool sizes; "
            "Keras: workers, each with use_multiprocessing False and True (default 0,1,cores)"
        ),
    ] = None,
    seconds: Annotated[float, typer.Option(help="throughput phase per configuration")] = 8.0,
    au_seconds: Annotated[
        float | None, typer.Option(help="AU phase per configuration (default seconds / 2)")
    ] = None,
    sample_seconds: Annotated[
        float, typer.Option(help="py-spy stack sampling per configuration; 0: none")
    ] = 3.0,
    step_ms: Annotated[float, typer.Option(help="emulated training step after each batch")] = 50.0,
    step: Annotated[
        str | None,
        typer.Option(
            "--step",
            help="MODULE:FUNC, your training step, called with each batch instead of the "
            "--step-ms sleep: its own rate on a cached batch and AU (CUDA events where it uses "
            "CUDA)",
        ),
    ] = None,
    timeout: Annotated[float, typer.Option(help="seconds a batch may take before it fails")] = 30.0,
    results: Annotated[Path, typer.Option(help="folder for the parquet file")] = Path("results"),
    name: Annotated[str, typer.Option(help="run name (part of the run id)")] = "profile",
    readers: Annotated[
        bool,
        typer.Option(
            "--readers/--no-readers",
            help="when decode dominates, time the verified readers on a sample of your files",
        ),
    ] = True,
    env: Annotated[
        str | None,
        typer.Option(
            "--env",
            help="environment to profile in: main, tensorflow (tf.data, Keras); default here",
        ),
    ] = None,
) -> None:
    """Profile your own Dataset or DataLoader: a worker sweep, memory, AU, where the time goes."""
    from imgbench.envs import current_environment

    if env is not None and env != current_environment():
        options = {
            "--batch-size": batch_size,
            "--workers": workers,
            "--seconds": seconds,
            "--au-seconds": au_seconds,
            "--sample-seconds": sample_seconds,
            "--step-ms": step_ms,
            "--step": step,
            "--timeout": timeout,
            "--results": results,
            "--name": name,
            "--env": env,
        }
        args = [target, *(a for pair in kw or [] for a in ("--kw", pair))]
        args += [str(a) for key, v in options.items() if v is not None for a in (key, v)]
        args.append("--readers" if readers else "--no-readers")
        raise typer.Exit(_in_environment(env, args))
    try:
        kwargs = parse_kwargs(kw or [])
        source = build_target(target, kwargs)
        step_fn = load_step(step) if step is not None else None
    except TargetError as exc:
        raise fail(str(exc)) from None
    settings = ProfileSettings(
        seconds=seconds,
        au_seconds=au_seconds,
        sample_seconds=sample_seconds,
        step_ms=step_ms,
        batch_size=batch_size,
        workers=_workers(workers),
        batch_timeout_s=timeout,
        first_batch_timeout_s=max(timeout, 120.0),
        compare_readers=readers,
        step=step_fn,
        step_target=step,
    )
    result = profile(
        source,
        target=target,
        settings=settings,
        results_dir=results,
        params={"kwargs": kwargs},
        on_configuration=_progress,
    )
    print_result(result)
    ok = any(c.status == "ok" for c in result.configurations)
    raise typer.Exit(0 if ok else 1)


def _in_environment(environment: str, args: list[str]) -> int:
    """``imgbench profile ARGS`` re-run by that environment's interpreter, as `imgbench run`
    runs its sessions (``imgbench.sessions.python_for_environment``); its exit code."""
    from imgbench.sessions import python_for_environment

    try:
        python = python_for_environment(environment, create=False)
    except RuntimeError as exc:
        raise fail(str(exc)) from None
    command = [python, "-m", "imgbench.cli", "profile", *args]
    console.print(f"[dim]$ {' '.join(command)}[/]", highlight=False)
    return subprocess.call(command)


def setting(config: Configuration) -> str:
    """How the row names its configuration: ``2``, or for Keras ``2 processes``."""
    mp = config.extra.get("use_multiprocessing")
    return str(config.workers) if mp is None else keras_label((config.workers, bool(mp)))


def _progress(config: Configuration) -> None:
    unit = "threads" if "tf_threads" in config.extra else "workers"
    if config.status == "ok":
        console.print(
            f"[dim]{unit}={setting(config)}: {config.images_per_s or 0:,.0f} images/s[/]",
            highlight=False,
        )
    else:
        err.print(f"[red]{unit}={setting(config)} failed:[/] {config.reason}", highlight=False)


def _mib(value: object) -> str:
    return f"{float(value) / 2**20:,.0f}" if isinstance(value, int | float) else ""


def print_result(result: ProfileResult) -> None:
    console.print(_configurations_table(result))
    if result.step:
        for line in step_lines(result):
            console.print(line, highlight=False, soft_wrap=True)
    _print_attribution(result)
    console.print("advice:", highlight=False)
    for line in result.advice:
        console.print(f"  - {line}", highlight=False, soft_wrap=True)
    console.print(f"rows: {result.results_path}", highlight=False)
    if result.flame_graph is not None:
        console.print(
            f"flame graph: {result.flame_graph} (open in https://www.speedscope.app)",
            highlight=False,
        )


def _configurations_table(result: ProfileResult) -> Table:
    """One row per configuration: rate, first batch, AU, memory and its growth, status."""
    table = Table(title=f"imgbench profile {result.target}")
    for column in (
        "threads (0: TF default)" if result.unit == "threads" else "workers",
        "images/s",
        "first batch s",
        "AU @ your step" if result.step else f"AU @ {result.step_ms:g} ms",
        "peak PSS MiB",
        "worker USS MiB",
        "worker USS growth MiB/min",
        "status",
    ):
        table.add_column(column, justify="left" if column == "status" else "right")
    for c in result.configurations:
        x = c.extra
        au = x.get("au")
        growth = worker_uss_growth(c)
        table.add_row(
            f"{setting(c)}{' (yours)' if c.user_setting else ''}",
            f"{c.images_per_s:,.0f}" if c.images_per_s else "",
            f"{x['time_to_first_batch_s']:.2f}" if "time_to_first_batch_s" in x else "",
            f"{au:.0%}" if isinstance(au, float) else "",
            _mib(x.get("peak_pss_bytes")),
            _mib(x.get("worker_uss_bytes_mean")),
            f"{growth / 2**20:+,.1f}" if isinstance(growth, float) else "",
            "ok" if c.status == "ok" else f"[red]failed[/]: {c.reason}",
        )
    return table


def _print_attribution(result: ProfileResult) -> None:
    """Where the time goes per configuration, why it is missing where it is, and sampling
    problems (on stderr)."""
    shares = Table(title="where the time goes (share of py-spy samples, all processes)")
    shares.add_column("workers", justify="right")
    for category in CATEGORIES:
        shares.add_column(CATEGORY_TITLES[category], justify="right")
    shares.add_column("samples", justify="right")
    problems = []
    for c in result.configurations:
        found = c.extra.get("attribution")
        if found:
            shares.add_row(
                setting(c),
                *(f"{found.get(cat, 0):.0%}" for cat in CATEGORIES),
                str(c.extra.get("attribution_samples", "")),
            )
        elif c.extra.get("attribution_error"):
            problems.append(f"workers={setting(c)}: {c.extra['attribution_error']}")
    if shares.row_count:
        console.print(shares)
    reasons = {c.extra.get("attribution_reason") for c in result.configurations}
    for reason in sorted(str(r) for r in reasons if r):
        console.print(f"where the time goes: {reason}", highlight=False, soft_wrap=True)
    for problem in problems:
        err.print(f"[yellow]no stacks[/] {problem}", highlight=False)


def step_lines(result: ProfileResult) -> list[str]:
    """The user's step: its own rate on a cached batch and what each configuration keeps busy."""
    lines = []
    for c in result.configurations:
        rate = c.extra.get("step_images_per_s_cached")
        if c.status != "ok" or not rate:
            continue
        au = c.extra.get("au")
        kept = c.extra.get("gpus_kept_at_90")
        lines.append(
            f"your step {result.step} at {setting(c)} {result.unit}: {rate:,.0f} images/s on a "
            f"cached batch ({'CUDA' if c.extra.get('step_cuda') else 'CPU'})"
            + (f", AU {au:.0%} fed by the loader" if isinstance(au, float) else "")
            + (f"; the loader keeps {kept:.2f} such steps 90% busy" if kept else "")
        )
    return lines


def result_json(result: ProfileResult) -> str:
    """The configurations as JSON (for scripts): workers, status, images/s and the extras."""
    return json.dumps(
        [
            {
                "workers": c.workers,
                "status": c.status,
                "reason": c.reason,
                "images_per_s": c.images_per_s,
                **c.extra,
            }
            for c in result.configurations
        ],
        default=str,
    )
