"""Resolve one side of a comparison: a run id (or unique prefix), a parquet file or folder (or an
``s3://BUCKET/PREFIX`` or an object in one), or a pytest-benchmark JSON file. A folder holding several runs is one side with their rounds merged
(that is how ``imgbench ci`` pools its interleaved repeats).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from imgbench.results.location import ResultsLocationError, is_remote
from imgbench.results.pytest_json import JSONImportError, rows_from_json
from imgbench.results.schema import to_table
from imgbench.results.store import LoadedResults, load_results, migrate


class SourceError(ValueError):
    """A side cannot be read (exit code 2)."""


@dataclass
class Side:
    label: str  # what the user gave, resolved (file, folder or run id)
    frame: pd.DataFrame


def _from_json(path: Path) -> pd.DataFrame:
    try:
        rows = rows_from_json(path)
    except JSONImportError as exc:
        raise SourceError(str(exc)) from None
    if not rows:
        raise SourceError(f"{path}: no benchmarks in it")
    return migrate(to_table(rows))


def _load(source: Path | str) -> LoadedResults:
    try:
        return load_results(source)
    except ResultsLocationError as exc:
        raise SourceError(str(exc)) from None


def _from_parquet(path: Path | str) -> pd.DataFrame:
    loaded = _load(path)
    if loaded.skipped:
        bad, reason = loaded.skipped[0]
        raise SourceError(f"{bad}: unreadable results file ({reason})")
    if loaded.frame.empty:
        raise SourceError(f"{path}: no result rows (no parquet files, or empty ones)")
    return loaded.frame


def _from_run_id(spec: str, results_dir: Path | str) -> tuple[str, pd.DataFrame]:
    if not is_remote(results_dir) and not Path(results_dir).is_dir():
        raise SourceError(
            f"{spec!r} is not a file, and the results folder {results_dir} is missing"
        )
    frame = _load(results_dir).frame
    runs = sorted({str(r) for r in frame["run_id"].dropna().unique()})
    exact = [r for r in runs if r == spec]
    matches = exact or [r for r in runs if r.startswith(spec)]
    if not matches:
        raise SourceError(
            f"unknown run {spec!r}: no such file, and no run id in {results_dir} starts with it"
        )
    if len(matches) > 1:
        shown = ", ".join(matches[:5]) + (" ..." if len(matches) > 5 else "")
        raise SourceError(
            f"run {spec!r} is ambiguous in {results_dir}: {len(matches)} runs ({shown})"
        )
    return matches[0], frame[frame["run_id"] == matches[0]].reset_index(drop=True)


def load_side(spec: str | Path, results_dir: Path | str = Path("results")) -> Side:
    """Read one side; every problem is a SourceError naming the file or run and what is wrong."""
    if is_remote(spec):
        return Side(label=str(spec), frame=_from_parquet(str(spec)))
    path = Path(spec)
    if path.is_dir():
        return Side(label=str(path), frame=_from_parquet(path))
    if path.is_file():
        if path.suffix.lower() == ".json":
            return Side(label=str(path), frame=_from_json(path))
        return Side(label=str(path), frame=_from_parquet(path))
    if path.suffix.lower() in {".json", ".parquet"} or "/" in str(spec):
        raise SourceError(f"{spec}: no such file or folder")
    run_id, frame = _from_run_id(str(spec), results_dir)
    return Side(label=run_id, frame=frame)
