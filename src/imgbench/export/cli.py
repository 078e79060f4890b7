"""``imgbench export``: the answer's configuration (or the row of ``--case``) as a standalone
Python module (docs/export.md). Exit codes: 0 written, 2 nothing to export (no rows, no such
case, or no exportable candidate: the message says which and why)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from imgbench.console import console, err, fail


def export_command(
    results: Annotated[str, typer.Option(help="results folder, or s3://BUCKET/PREFIX")] = "results",
    out: Annotated[Path, typer.Option(help="the module to write")] = Path("imgbench_loader.py"),
    case: Annotated[
        str | None,
        typer.Option(
            "--case", help="export this loader row's case id instead of the answer's pick"
        ),
    ] = None,
) -> None:
    """Write the recommended loader configuration as a standalone Python module:
    make_loader(root, batch_size), the decoder, the recipe, the allocator's variables, and a
    header citing the rows. It imports no imgbench."""
    from imgbench.export.choose import ExportError, choose
    from imgbench.export.module import render
    from imgbench.report.cli import newest_group
    from imgbench.results.location import ResultsLocationError, is_remote
    from imgbench.results.store import load_results

    if not is_remote(results) and not Path(results).exists():
        raise fail(f"no results folder at {results}: run `make bench` or `imgbench run` first")
    try:
        loaded = load_results(results)
    except ResultsLocationError as exc:
        raise fail(str(exc)) from None
    # the answer of the newest `imgbench run`, as `imgbench report` gives it; --case: any run
    frame = loaded.frame if case is not None else newest_group(loaded.frame)
    try:
        choice = choose(frame, case)
    except ExportError as exc:
        raise fail(str(exc)) from None
    if choice.asked is not None:
        err.print(
            f"[yellow]{choice.asked['case_id']} cannot be exported: {choice.why_not}; "
            f"exported the best exportable candidate instead: {choice.row['case_id']}[/]",
            highlight=False,
            soft_wrap=True,
        )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render(choice), encoding="utf-8")
    console.print(
        f"{out}: {choice.row['case_id']} ({float(choice.row['images_per_s_median']):,.1f} "
        f"images/s); run it: python {out} PATH/TO/IMAGE/FOLDER",
        highlight=False,
        soft_wrap=True,
    )
