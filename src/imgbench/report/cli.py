"""``imgbench report [RUN...]``: the answer as one offline HTML file, or Markdown for CI.

RUN is a run id (or a unique prefix), a run group (every session of one ``imgbench run``), or a
parquet file. Without RUN: the newest ``imgbench run`` in the results folder, all its sessions.
Exit codes: 0 the report was written, 2 unusable input (a RUN that matches nothing).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import pandas as pd
import typer

from imgbench.console import console, err, fail
from imgbench.results.location import ResultsLocationError, is_remote
from imgbench.results.store import LoadedResults, load_results


class SelectionError(ValueError):
    """A RUN argument matches no run."""


def newest_group(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows of the newest run's group (its environments, datasets and allocator sessions)."""
    if frame.empty:
        return frame
    newest = frame.loc[frame["created_utc"].idxmax()]
    group = newest.get("run_group")
    if isinstance(group, str) and group:
        return frame[frame["run_group"] == group]
    return frame[frame["run_id"] == newest["run_id"]]


def select_runs(frame: pd.DataFrame, runs: list[str]) -> pd.DataFrame:
    """Rows of the runs named by id, unique id prefix or run group."""
    chosen = []
    for name in runs:
        by_group = frame["run_group"].astype(str) == name
        if by_group.any():
            chosen.append(frame[by_group])
            continue
        ids = sorted({r for r in frame["run_id"].dropna().astype(str) if r.startswith(name)})
        if len(ids) != 1:
            found = "no run" if not ids else f"{len(ids)} runs ({', '.join(ids[:3])}...)"
            raise SelectionError(f"{found} matching {name!r}")
        chosen.append(frame[frame["run_id"] == ids[0]])
    return pd.concat(chosen).drop_duplicates(subset=["run_id", "case_id", "created_utc"])


def _load(runs: list[str], results: Path | str) -> tuple[LoadedResults, pd.DataFrame, str]:
    files = [r if is_remote(r) else Path(r) for r in runs if r.endswith(".parquet")]
    names = [r for r in runs if not r.endswith(".parquet")]
    if files:
        missing = [str(f) for f in files if isinstance(f, Path) and not f.is_file()]
        if missing:
            raise SelectionError(f"no such file: {', '.join(missing)}")
        loaded = load_results(*files)
        frame = loaded.frame
        source = ", ".join(str(f) for f in files)
        if names:
            frame = select_runs(load_results(results).frame, names)
            frame = pd.concat([loaded.frame, frame])
        return loaded, frame, source
    loaded = load_results(results)
    frame = loaded.frame
    if names:
        return loaded, select_runs(frame, names), str(results)
    return loaded, newest_group(frame), str(results)


def report_command(
    runs: Annotated[
        list[str] | None,
        typer.Argument(
            help="run ids, unique prefixes, run groups or parquet files (default: "
            "the newest `imgbench run`)"
        ),
    ] = None,
    results: Annotated[str, typer.Option(help="results folder, or s3://BUCKET/PREFIX")] = "results",
    out: Annotated[
        Path | None,
        typer.Option(help="file to write (default: imgbench-report.html; Markdown: stdout)"),
    ] = None,
    markdown: Annotated[
        bool, typer.Option("--markdown", help="write Markdown (a CI job summary) instead of HTML")
    ] = False,
) -> None:
    """The configuration to use, its speed-up over the common default and what bounds it, per
    machine and dataset: one self-contained HTML file (works offline), or Markdown."""
    from imgbench.report.document import build_report

    local = not is_remote(results)
    if local and not Path(results).exists() and not any(r.endswith(".parquet") for r in runs or []):
        raise fail(f"no results folder at {results}: run `make bench` or `imgbench run` first")
    try:
        loaded, frame, source = _load(list(runs or []), results)
    except SelectionError as exc:
        raise fail(f"{exc} in {results}") from None
    except ResultsLocationError as exc:
        raise fail(str(exc)) from None
    for path, reason in loaded.skipped:
        err.print(f"[yellow]warning: {path} left out: {reason}[/]", highlight=False, soft_wrap=True)
    report = build_report(frame, loaded, source)
    for note in report.notes:
        err.print(f"[yellow]{note}[/]", highlight=False, soft_wrap=True)
    if markdown:
        from imgbench.report.markdown import render_markdown

        text = render_markdown(report)
        if out is None:
            sys.stdout.write(text)
            return
    else:
        try:
            from imgbench.report.html import render_html
        except ModuleNotFoundError as exc:
            raise fail(
                f"the HTML report needs {exc.name}: pip install 'imgbench[dashboard]'"
            ) from None
        text = render_html(report)
        out = out or Path("imgbench-report.html")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    console.print(
        f"report: {out} ({len(report.answers)} answer(s))", highlight=False, soft_wrap=True
    )
