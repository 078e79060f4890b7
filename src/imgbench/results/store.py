"""Parquet files of results: one per run, written atomically, read with old schemas migrated.

Every write is atomic (``imgbench.atomic``): after a kill the previous complete version stays in
place, and a reader never sees half a file.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from imgbench.atomic import atomic_file
from imgbench.errors import one_line
from imgbench.results.schema import COLUMNS, SCHEMA, SCHEMA_VERSION, to_table

DEFAULT_RESULTS_DIR = Path("results")


def atomic_write_table(table: pa.Table, path: Path, metadata: dict[str, str] | None = None) -> None:
    """Write ``table`` to ``path`` as parquet, atomically (see ``imgbench.atomic``)."""
    if metadata:
        merged = dict(table.schema.metadata or {})
        merged.update({k.encode(): v.encode() for k, v in metadata.items()})
        table = table.replace_schema_metadata(merged)
    with atomic_file(path) as handle:
        pq.write_table(table, handle, compression="zstd")


def write_rows(rows: list[dict[str, object]], path: Path) -> None:
    """Write result rows (dicts keyed by schema columns) atomically."""
    atomic_write_table(
        to_table(rows), path, metadata={"imgbench_schema_version": str(SCHEMA_VERSION)}
    )


@dataclass
class LoadedResults:
    frame: pd.DataFrame
    files: list[Path]
    skipped: list[tuple[Path, str]]  # files that could not be read, and why


def _result_files(sources: list[Path]) -> list[Path]:
    files: list[Path] = []
    for source in sources:
        if source.is_dir():
            files.extend(sorted(p for p in source.glob("*.parquet") if not p.name.startswith(".")))
        else:
            files.append(source)
    return files


def migrate(table: pa.Table) -> pd.DataFrame:
    """Bring a table of any schema version to the current column set (missing columns as nulls)."""
    frame = table.to_pandas()
    for name in COLUMNS:
        if name not in frame.columns:
            frame[name] = pd.Series([None] * len(frame), dtype=_pandas_dtype(name))
    extra = [c for c in frame.columns if c not in COLUMNS]
    return frame[COLUMNS + extra]


def _pandas_dtype(name: str) -> str:
    dtype = SCHEMA.field(name).type
    if pa.types.is_integer(dtype):
        return "Int64"
    if pa.types.is_floating(dtype):
        return "float64"
    if pa.types.is_boolean(dtype):
        return "boolean"
    return "object"


def load_results(*sources: Path | str) -> LoadedResults:
    """Read every parquet file in the given files or folders; unreadable files are reported, not fatal."""
    files = _result_files([Path(s) for s in sources] or [DEFAULT_RESULTS_DIR])
    frames: list[pd.DataFrame] = []
    read: list[Path] = []
    skipped: list[tuple[Path, str]] = []
    for path in files:
        try:
            frames.append(migrate(pq.read_table(path)))
            read.append(path)
        except (OSError, pa.ArrowException, ValueError) as exc:
            reason = one_line(exc)
            skipped.append((path, reason))
            warnings.warn(f"skipped unreadable results file {path}: {reason}", stacklevel=2)
    frame = pd.concat(frames, ignore_index=True) if frames else migrate(SCHEMA.empty_table())
    return LoadedResults(frame=frame, files=read, skipped=skipped)


def run_summary(frame: pd.DataFrame) -> pd.DataFrame:
    """One line per run: when, where, on what, and how many cases ok / skipped / failed."""
    if frame.empty:
        return pd.DataFrame(
            columns=["run_id", "created_utc", "hostname", "dataset_name", "ok", "skipped", "failed"]
        )
    counts = frame.pivot_table(
        index="run_id", columns="status", values="case_id", aggfunc="count", fill_value=0
    )
    for status in ("ok", "skipped", "failed"):
        if status not in counts.columns:
            counts[status] = 0
    first = frame.groupby("run_id").agg(
        created_utc=("created_utc", "min"),
        run_name=("run_name", "first"),
        hostname=("hostname", "first"),
        git_commit=("git_commit", "first"),
        dataset_name=("dataset_name", "first"),
    )
    summary = first.join(counts[["ok", "skipped", "failed"]]).reset_index()
    return summary.sort_values("created_utc").reset_index(drop=True)
