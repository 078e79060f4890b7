"""The results the dashboard shows: which folder (or ``s3://`` prefix), read once per change of
its files, cached.

Reading goes through ``imgbench.results.store.load_results`` (schema migration, unreadable files
skipped and reported) and ``imgbench.results.location`` (folders and buckets); this module only
adds the labels the filters and charts need.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from imgbench.paths import repo_root
from imgbench.results.location import ResultsLocationError, is_remote, results_location
from imgbench.results.schema import COLUMNS, SCHEMA, json_object
from imgbench.results.store import load_results, migrate

RESULTS_ENV = "IMGBENCH_RESULTS"
Signature = tuple[tuple[str, int, int], ...]
Where = Path | str  # a folder, or an s3://BUCKET/PREFIX (kept as text)


@dataclass
class Results:
    """Every row of the folder, with the files read and the files skipped (name, reason)."""

    folder: Where
    frame: pd.DataFrame
    files: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    options: dict[str, list[str]] = field(default_factory=dict)  # filter choices, computed once
    signature: Signature = ()  # the files' (name, mtime, size) this was read from
    error: str | None = None  # the location cannot be read (S3: unreachable, keys, bucket)

    @property
    def empty(self) -> bool:
        return self.frame.empty


def _where(text: str) -> Where:
    return text if is_remote(text) else Path(text).expanduser().resolve()


def results_dir(argv: list[str] | None = None) -> Where:
    """``-- --results DIR`` on the streamlit command line, else $IMGBENCH_RESULTS, else results/.
    A folder, or an ``s3://BUCKET/PREFIX`` (endpoint and keys from the AWS_* variables)."""
    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    parser.add_argument("--results")
    known, _ = parser.parse_known_args(sys.argv[1:] if argv is None else argv)
    if known.results is not None:
        return _where(known.results)
    if os.environ.get(RESULTS_ENV):
        return _where(os.environ[RESULTS_ENV])
    root = repo_root()
    return (root / "results") if root else Path("results").resolve()


def exists(folder: Where) -> bool:
    return is_remote(folder) or Path(folder).is_dir()


def signature(folder: Where) -> Signature:
    """(name, mtime, size) of every results file: a new or rewritten file changes the cache key.
    A bucket that cannot be listed has the signature of its error, so the page says why."""
    if not exists(folder):
        return ()
    try:
        entries = results_location(folder).files()
    except ResultsLocationError as exc:
        return ((f"error: {exc}", 0, 0),)
    return tuple((e.name, e.mtime_ns, e.size) for e in entries)


def _empty(folder: Where, error: str | None = None) -> Results:
    empty = label(migrate(SCHEMA.empty_table()))
    return Results(folder=folder, frame=empty, options=filter_options(empty), error=error)


def load(folder: Where) -> Results:
    """Read and label every row of ``folder`` (uncached; see ``cached_results``)."""
    if not exists(folder):
        return _empty(folder)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # load_results warns per skipped file; we show them
            loaded = load_results(folder)
    except ResultsLocationError as exc:
        return _empty(folder, str(exc))
    frame = label(loaded.frame)
    return Results(
        folder=folder,
        frame=frame,
        files=[p.name for p in loaded.files],
        skipped=[(p.name, reason) for p, reason in loaded.skipped],
        options=filter_options(frame),
    )


# cache_resource, not cache_data: cache_data pickles the frame on every hit, which for 200k rows
# with raw samples costs about 1 s per rerun. Pages treat the frame as read-only.
@st.cache_resource(show_spinner="Reading results…", max_entries=2)
def _cached(folder: str, files: Signature) -> Results:
    results = load(_where(folder))
    results.signature = files
    return results


def cached_results(folder: Where) -> Results:
    """The folder's results, re-read only when a file was added, removed or rewritten."""
    return _cached(str(folder), signature(folder))


def label(frame: pd.DataFrame) -> pd.DataFrame:
    """Add the display columns shared by filters and charts, in place (the frame is fresh from
    ``load_results``; copying 200k rows with raw samples would cost more than the rest)."""
    frame["threads_label"] = _threads_label(frame["threads"])
    machine = frame["hostname"].fillna("?").astype(str) + " · "
    # a node label (several Ray nodes on one host share its hardware) names which node measured
    if frame["node_label"].notna().any():
        node = frame["node_label"].fillna("").astype(str)
        machine = machine + node.where(node == "", node + " · ")
    frame["machine_label"] = machine + frame["machine_id"].fillna("?").astype(str).str[:8]
    run_ids = frame["run_id"].fillna("?").astype(str)
    created = pd.to_datetime(frame["created_utc"], utc=True)
    first = created.groupby(run_ids).min()
    names = first.dt.strftime("%Y-%m-%d %H:%M").fillna("?") + " · " + first.index.to_series()
    frame["run_label"] = run_ids.map(names)
    return frame


def _threads_label(threads: pd.Series) -> pd.Series:
    """1, 2, ... or "default" (null = the library's default); mapped per distinct value (fast)."""
    numbers = pd.to_numeric(threads, errors="coerce").fillna(-1)
    names = {value: "default" if value < 0 else str(int(value)) for value in numbers.unique()}
    return numbers.map(names).astype(str)


FILTER_COLUMNS = {
    "machine": "machine_label",
    "run": "run_label",
    "dataset": "dataset_name",
    "environment": "environment",
    "library": "library",
    "codec": "codec",
    "threads": "threads_label",
    "allocator": "allocator",
}


# The format stage's ``raw-file`` case reads the same bytes from one concatenated file: the disk
# and page-cache ceiling for the formats, not a format to choose (imgbench.formats.cases).
STORAGE_CEILING_PREFIX = "raw"


def is_storage_ceiling(rows: pd.DataFrame) -> pd.Series:
    """Format rows of the raw-file ceiling; one rule for every page that ranks formats."""
    return (rows["stage"] == "format") & rows["library"].astype(str).str.startswith(
        STORAGE_CEILING_PREFIX
    )


def filter_options(frame: pd.DataFrame) -> dict[str, list[str]]:
    options = {}
    for name, column in FILTER_COLUMNS.items():
        values = frame[column].dropna().astype(str).unique().tolist()
        options[name] = sorted(values, reverse=(name == "run"))  # newest run first
    return options


def to_results_parquet(frame: pd.DataFrame) -> bytes:
    """Rows as a results file (schema columns only) that ``load_results`` reads back."""
    buffer = io.BytesIO()
    frame[COLUMNS].to_parquet(buffer, index=False)
    return buffer.getvalue()


def parse_json_column(values: Iterable[Any]) -> list[dict[str, Any]]:
    """JSON text per row to dicts; null or broken text becomes {} (the page says what is missing)."""
    return [json_object(text) for text in values]


def with_json_keys(frame: pd.DataFrame, keys: Iterable[str]) -> pd.DataFrame:
    """Copy of ``frame`` with one column per key, taken from extra_json, else from params_json."""
    frame = frame.copy()
    extra = parse_json_column(frame["extra_json"])
    params = parse_json_column(frame["params_json"])
    for key in keys:
        frame[key] = [e.get(key, p.get(key)) for e, p in zip(extra, params, strict=True)]
    return frame
