"""The columns every result row starts from: the schema's empty row, the run, the machine and
the checkout. The pytest plugin and ``imgbench profile`` both build their rows on it, so a row
says where and when it was measured the same way whichever command measured it."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from imgbench.harness.measure import Measurement
from imgbench.machine import commit_info, machine_info
from imgbench.results.schema import empty_row


def new_run_id(name: str | None) -> str:
    """``UTCSTAMP-NAME-RANDOM``: sorts by time, and names the parquet file of the run."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    return f"{stamp}-{name or 'run'}-{uuid.uuid4().hex[:6]}"


def row_header(run_id: str, run_name: str | None, run_group: str) -> dict[str, Any]:
    """A row with every column, filled with the run, the machine and the git checkout."""
    row = empty_row()
    commit = commit_info()
    row.update(machine_info().as_row())
    row.update(
        run_id=run_id,
        run_name=run_name,
        run_group=run_group,
        created_utc=datetime.now(UTC),
        git_commit=commit.commit,
        git_branch=commit.branch,
        git_dirty=commit.dirty,
    )
    return row


def measurement_columns(measurement: Measurement) -> dict[str, Any]:
    """The metrics of a measurement and the thread settings it ran under."""
    columns = measurement.metrics()
    if measurement.library_version:
        columns["library_version"] = measurement.library_version
    columns.update(
        threads_opencv=measurement.threads.threads_opencv,
        threads_torch=measurement.threads.threads_torch,
        threads_blas=measurement.threads.threads_blas,
        thread_env=measurement.threads.thread_env,
        allocator_env=measurement.threads.allocator_env,
    )
    return columns
