"""``imgbench verify readers``: every available reader on every image, one table per reader.

The command and its tables only; the checks are in ``imgbench.readers.verify``, which read
sessions import without the CLI stack. Imported by ``imgbench.cli`` alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from imgbench.console import fail
from imgbench.readers.base import ReaderSpec
from imgbench.readers.registry import readers
from imgbench.readers.verify import (
    ReaderReport,
    VerifyError,
    load_images,
    selected,
    tolerance,
    verify_reader,
)


def verify_command(
    dataset: Annotated[str, typer.Option(help="a folder of images, or a recipe name")],
    max_images: Annotated[
        int, typer.Option(help="images per codec, from the start of the manifest")
    ] = 64,
    reader: Annotated[
        list[str] | None, typer.Option(help="only this reader: library or library/variant")
    ] = None,
    reduce: Annotated[int, typer.Option(help="factor for the reduced-size variants")] = 4,
    show_all: Annotated[bool, typer.Option("--all", help="one line per image, passes too")] = False,
    strict: Annotated[bool, typer.Option(help="exit 1 when any image fails")] = False,
) -> None:
    """Run every available reader on every image and compare it with a reference decode."""
    console = Console()
    try:
        failures = run_verification(
            console,
            dataset=dataset,
            max_images=max_images,
            only=reader or [],
            reduce=reduce,
            show_all=show_all,
        )
    except VerifyError as exc:
        raise fail(exc) from None
    raise typer.Exit(1 if strict and failures else 0)


def run_verification(
    console: Console,
    *,
    dataset: str,
    max_images: int,
    only: Sequence[str],
    reduce: int,
    show_all: bool,
) -> int:
    """Print the tables; returns the number of failed (reader, image) pairs."""
    from imgbench.envs import current_environment

    loaded = load_images(dataset, max_images)
    specs = [s for s in readers() if selected(s, only)]
    if not specs:
        raise VerifyError(f"no reader matches {', '.join(only)}")
    environment = current_environment()
    console.print(
        f"dataset {loaded.dataset}: {len(loaded.images)} images "
        f"({', '.join(f'{n} {c}' for c, n in loaded.per_codec.items())}); "
        f"environment {environment}; "
        f"tolerance (mean abs error vs Pillow reference): lossless {tolerance('png', 'full'):g}, "
        f"JPEG/WebP {tolerance('jpeg', 'full'):g}, reduced 1/{reduce} {tolerance('jpeg', 'reduced'):g}",
        highlight=False,
    )
    reports = [verify_reader(spec, loaded.images, reduce, environment) for spec in specs]
    for report in reports:
        if report.status == "ran" and (report.failures or show_all) and report.verdicts:
            console.print(_reader_table(report, show_all))
    console.print(_summary_table(reports))
    return sum(r.failures for r in reports)


def _name(spec: ReaderSpec) -> str:
    return f"{spec.library}/{spec.variant}"


def _reader_table(report: ReaderReport, show_all: bool) -> Table:
    passed = len(report.verdicts) - report.failures
    table = Table(title=f"{_name(report.spec)}: {passed} of {len(report.verdicts)} pass")
    table.add_column("image", no_wrap=True)
    table.add_column("codec", no_wrap=True)
    table.add_column("result")
    table.add_column("MAE", justify="right", no_wrap=True)
    for codec, verdict in report.verdicts:
        if verdict.ok and not show_all:
            continue
        table.add_row(
            verdict.path,
            codec,
            "[green]pass[/]" if verdict.ok else f"[red]{verdict.detail}[/]",
            "" if verdict.mae is None else f"{verdict.mae:.2f}",
        )
    return table


def _summary_table(reports: Sequence[ReaderReport]) -> Table:
    table = Table(title="readers")
    table.add_column("reader", no_wrap=True)
    for name in ("images", "pass", "fail", "max MAE"):
        table.add_column(name, justify="right", no_wrap=True)
    table.add_column("status")
    for report in reports:
        maes = [v.mae for _, v in report.verdicts if v.ok and v.mae is not None]
        if report.status != "ran":
            status = f"[yellow]{report.status}[/]: {report.reason}"
        elif not report.verdicts:
            status = "[yellow]no images of its codecs[/]"
        else:
            status = "[green]pass[/]" if not report.failures else "[red]fail[/]"
        table.add_row(
            _name(report.spec),
            str(len(report.verdicts)),
            str(len(report.verdicts) - report.failures),
            str(report.failures),
            f"{max(maes):.2f}" if maes else "",
            status,
        )
    return table
