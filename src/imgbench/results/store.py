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
from imgbench.results.location import (
    LocalLocation,
    ObjectPath,
    ResultsLocation,
    ResultsLocationError,
    is_remote,
    results_location,
)
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


def rows_table(rows: list[dict[str, object]]) -> pa.Table:
    """Result rows (dicts keyed by schema columns) as a table carrying the schema version."""
    table = to_table(rows)
    merged = dict(table.schema.metadata or {})
    merged[b"imgbench_schema_version"] = str(SCHEMA_VERSION).encode()
    return table.replace_schema_metadata(merged)


def write_rows(rows: list[dict[str, object]], path: Path | str) -> None:
    """Write result rows atomically to a file path, or an ``s3://bucket/prefix/NAME.parquet``."""
    spec = str(path)
    if is_remote(spec):
        parent, name = spec.rstrip("/").rsplit("/", 1)
        results_location(parent).write_table(name, rows_table(rows))
        return
    atomic_write_table(rows_table(rows), Path(path))


@dataclass
class LoadedResults:
    frame: pd.DataFrame
    files: list[Path | ObjectPath]  # a folder's files are Paths, a bucket's ObjectPaths
    skipped: list[tuple[Path | ObjectPath, str]]  # files that could not be read, and why


def _result_files(sources: list[Path | str]) -> list[tuple[ResultsLocation, str]]:
    """(location, file name) of every results file the sources name (folders, files, s3://)."""
    files: list[tuple[ResultsLocation, str]] = []
    for source in sources:
        if is_remote(source):
            url = str(source).rstrip("/")
            if url.endswith(".parquet"):
                parent, name = url.rsplit("/", 1)
                files.append((results_location(parent), name))
            else:
                location = results_location(url)
                files.extend((location, entry.name) for entry in location.files())
            continue
        path = Path(source)
        if path.is_dir():
            folder = LocalLocation(path)
            files.extend((folder, entry.name) for entry in folder.files())
        else:
            files.append((LocalLocation(path.parent), path.name))
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
    """Read every parquet file in the given files, folders or ``s3://`` prefixes; unreadable files
    are reported, not fatal. A location that cannot be reached raises ResultsLocationError."""
    files = _result_files(list(sources) or [DEFAULT_RESULTS_DIR])
    frames: list[pd.DataFrame] = []
    read: list[Path | ObjectPath] = []
    skipped: list[tuple[Path | ObjectPath, str]] = []
    for location, name in files:
        path = location.path_of(name)
        try:
            frames.append(migrate(location.read_table(name)))
            read.append(path)
        except (OSError, pa.ArrowException, ValueError) as exc:
            if isinstance(exc, ResultsLocationError):
                raise
            reason = one_line(exc)
            skipped.append((path, reason))
            warnings.warn(f"skipped unreadable results file {path}: {reason}", stacklevel=2)
    frame = pd.concat(frames, ignore_index=True) if frames else migrate(SCHEMA.empty_table())
    return LoadedResults(frame=frame, files=read, skipped=skipped)


def run_summary(frame: pd.DataFrame) -> pd.DataFrame:
    """One line per run: when, where, on what, and how many cases ok / skipped / failed."""
    if frame.empty:
        return pd.DataFrame(
            columns=[
                "run_id",
                "created_utc",
                "hostname",
                "node_label",
                "dataset_name",
                "ok",
                "skipped",
                "failed",
            ]
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
        node_label=("node_label", "first"),
        git_commit=("git_commit", "first"),
        dataset_name=("dataset_name", "first"),
    )
    summary = first.join(counts[["ok", "skipped", "failed"]]).reset_index()
    return summary.sort_values("created_utc").reset_index(drop=True)
