"""``imgbench verify augment``: the agreement table of every transform and pipeline.

The command and its table only; the checks are in ``imgbench.augment.verify``, which the
augmentation cases import without the CLI stack. Imported by ``imgbench.cli`` alone.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from imgbench.augment import spec
from imgbench.augment.verify import PHOTOS, all_agreements, photos
from imgbench.console import fail


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3g}"


def verify_command(
    transform: Annotated[
        list[str] | None, typer.Option("--transform", "-t", help="only these transforms")
    ] = None,
    library: Annotated[
        str | None, typer.Option(help="only rows whose library/variant contains this")
    ] = None,
    strict: Annotated[bool, typer.Option(help="exit 1 when anything is flagged")] = False,
    task: Annotated[
        str | None,
        typer.Option(help="segmentation | crop-ocr: that task's recipes, on synthetic pairs"),
    ] = None,
) -> None:
    """Check that every augmentation library does the same work, on real photos."""
    console = Console(width=None if sys.stdout.isatty() else 200)
    if task is not None:
        _verify_task(console, task, library, strict)
        return
    unknown = [t for t in transform or [] if t not in spec.TRANSFORM_BY_NAME]
    if unknown:
        raise fail(
            f"unknown transform(s) {', '.join(unknown)}; known: {', '.join(spec.TRANSFORM_BY_NAME)}"
        )
    if not photos():
        raise fail("scikit-image is needed for the photos")
    results = all_agreements(transform or None)
    if library:
        results = [a for a in results if library in a.key]
    table = Table(title=f"augmentation agreement on {', '.join(PHOTOS)} (grey levels)")
    for column in (
        "transform",
        "library",
        "check",
        "vs",
        "mean abs",
        "max abs",
        "tolerance",
        "result",
    ):
        table.add_column(column, no_wrap=column in ("transform", "library"))
    styles = {"pass": "green", "flagged": "bold yellow", "error": "bold red", "n/a": "dim"}
    for a in results:
        table.add_row(
            a.name,
            a.key,
            a.check,
            a.reference if a.check == "compare" else "",
            _fmt(a.mean_abs),
            _fmt(a.max_abs),
            str(a.tolerance) if a.tolerance is not None and a.check != "shape" else "",
            f"[{styles[a.status]}]{a.flag}[/]",
        )
    console.print(table)
    counts: dict[str, int] = {}
    for a in results:
        counts[a.status] = counts.get(a.status, 0) + 1
    console.print(", ".join(f"{n} {status}" for status, n in sorted(counts.items())))
    if strict and any(a.status in ("flagged", "error") for a in results):
        raise typer.Exit(1)


def _verify_task(console: Console, task: str, library: str | None, strict: bool) -> None:
    """The task recipes with the crop and flip forced: masks equal, images within tolerance."""
    from imgbench.augment.task_cases import VERIFY_SIZES, verify_task
    from imgbench.augment.tasks import REFERENCE

    if task not in REFERENCE:
        raise fail(f"unknown task {task}; known: {', '.join(REFERENCE)}")
    results = [a for a in verify_task(task) if not library or library in a.key]
    sizes = ", ".join(f"{w}x{h}" for w, h in VERIFY_SIZES)
    table = Table(title=f"{task} agreement on synthetic pairs ({sizes}), vs {REFERENCE[task]}")
    for column in ("library", "mask pixels differing", "image mean abs", "result"):
        table.add_column(column, no_wrap=column == "library")
    for a in results:
        style = "green" if a.flag.startswith("pass") else "bold yellow"
        table.add_row(
            a.key, str(a.mask_pixels_differing), f"{a.image_mean_abs:.3g}", f"[{style}]{a.flag}[/]"
        )
    console.print(table)
    if strict and any(not a.flag.startswith("pass") for a in results):
        raise typer.Exit(1)
