"""``imgbench verify formats``: write every storage format, read it back, print one table.

The command and its table only; the round-trip checks are in ``imgbench.formats.verify``.
Imported by ``imgbench.cli`` alone.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from imgbench.console import fail
from imgbench.datasets.manifest import DatasetError
from imgbench.formats import registry, verify


def verify_command(
    dataset: Annotated[str, typer.Option("--dataset", help="a folder of images, or a recipe name")],
    formats: Annotated[
        list[str] | None,
        typer.Option("--format", "-f", help="only these formats (repeatable); default: all"),
    ] = None,
    max_images: Annotated[
        int, typer.Option("--max-images", help="verify the first N images only (0 = all)")
    ] = 0,
) -> None:
    """Write every storage format and check every record reads back identical, with its label."""
    console = Console()
    try:
        manifest = verify.load_manifest(dataset)
    except DatasetError as exc:
        raise fail(exc) from None
    known = registry.formats()  # built-in and registered by other packages
    unknown = sorted(set(formats or ()) - {s.name for s in known})
    if unknown:
        raise fail(f"unknown format(s) {unknown}; known: {[s.name for s in known]}")
    with tempfile.TemporaryDirectory(prefix="imgbench-verify-") as tmp:
        results = verify.verify_all(manifest, Path(tmp), names=formats, limit=max_images)
    table = Table(title=f"round trip of {manifest.root}")
    for column in ("format", "status", "records", "size ratio", "write s", "detail"):
        table.add_column(column)
    colours = {"ok": "green", "skipped": "yellow", "mismatch": "red", "error": "red"}
    for r in results:
        detail = r.reason or "; ".join(r.messages)
        if r.skipped_files:
            detail = (
                detail + "; " if detail else ""
            ) + f"{len(r.skipped_files)} source files skipped"
        table.add_row(
            r.name,
            f"[{colours[r.status]}]{r.status}[/]",
            str(r.records),
            f"{r.size_ratio:.3f}" if r.size_ratio is not None else "",
            f"{r.write_s:.2f}" if r.write_s is not None else "",
            detail,
        )
    console.print(table)
    for r in results:
        for path, why in r.skipped_files[: verify.MAX_MESSAGES]:
            console.print(f"  {r.name}: skipped {path}: {why}")
    if any(r.status in ("mismatch", "error") for r in results):
        raise typer.Exit(1)
