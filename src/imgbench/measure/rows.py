"""Result rows: the schema's empty row, then the run, the machine and the checkout, the case,
its dataset and its measurement. The pytest plugin and ``imgbench profile`` both build their
rows here, so a row says where and when it was measured the same way whichever command
measured it."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from imgbench.disks.catalog import disk_profile
from imgbench.machine import commit_info, dist_version, machine_info
from imgbench.measure.case import Case
from imgbench.measure.reference import MachineReference
from imgbench.measure.rounds import Measurement
from imgbench.measure.settings import FIELDS, Settings
from imgbench.results.schema import comparison_key, empty_row

if TYPE_CHECKING:
    from imgbench.datasets import Dataset


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


def settings_columns(settings: Settings) -> dict[str, Any]:
    """Every control of the settings, each in the schema column of its name (a control without
    one is a bug that tests/measure/test_settings.py names). What the measurement recorded as
    it ran (the kept rounds, the allocator in force) overwrites these in the row."""
    return {name: getattr(settings, name) for name in FIELDS}


def case_listing(test_id: str, case: Case) -> dict[str, Any]:
    """What a row says about a case before it is measured (``--imgbench-list-cases``)."""
    return {
        "test_id": test_id,
        "case_id": case.case_id,
        "stage": case.stage,
        "library": case.library,
        "variant": case.variant,
        "environment": case.environment,
        "codec": case.params.get("codec"),
        "mode": case.params.get("mode"),
        "cache_state": case.params.get("cache_state"),
        "threads": case.threads,
        "workers": case.params.get("workers"),
        "batch_size": case.params.get("batch_size"),
        # a case may say its task (segmentation, crop-ocr); else its stage's (Case.task: the
        # stages that hand a model (image, label) samples are classification)
        "task": case.columns.get("task") or case.task,
        "params_json": json.dumps(dict(case.params), sort_keys=True, default=str),
    }


@dataclass(frozen=True)
class RunHeader:
    """Which run a row belongs to: its id, the name it was saved under, its group, and the
    machine's reference figures measured once for the run (None: not measured, null columns)."""

    run_id: str
    run_name: str | None
    run_group: str
    reference: MachineReference | None = None


def case_row(
    run: RunHeader,
    listing: dict[str, Any],
    case: Case,
    outcome: Measurement | None,
    status: str,
    reason: str | None,
    wall_s: float,
    dataset: Dataset | str,
    columns: Mapping[str, Any] | None = None,
    settings: Settings | None = None,
) -> dict[str, Any]:
    """One case's row: the run, the case, its dataset, and the measurement when it has one.

    ``dataset`` is the loaded dataset, or only its name when the session never loaded it;
    ``columns`` come from the handles of the services the case used; a measured row also
    carries the session's ``settings`` (:func:`settings_columns`)."""
    row = row_header(run.run_id, run.run_name, run.run_group)
    row.update(listing)
    row.update(
        library_version=dist_version(case.dist) if case.dist else None,
        status=status,
        reason=reason,
        wall_s=wall_s,
    )
    row.update(case.columns)
    row.update(columns or {})
    if isinstance(dataset, str):
        row.update(dataset_name=dataset)
    else:
        row.update(
            dataset_name=dataset.name,
            dataset_fingerprint=dataset.fingerprint,
            dataset_images=dataset.n_images,
            dataset_mean_megapixels=dataset.mean_megapixels,
            dataset_mean_bytes=dataset.mean_bytes,
            dataset_codec=dataset.codec,
        )
    if outcome is not None:
        if settings is not None:
            row.update(settings_columns(settings))
        row.update(measurement_columns(outcome))
        row["extra_json"] = json.dumps({"timer": outcome.timer, **outcome.extra}, default=str)
    if settings is not None:  # skipped rows too: which disk the case's data sat on
        # an object store keeps its data in its own folder, never on the emulated disk
        disk = "none" if row.get("storage") == "s3" else settings.disk_profile
        row.update(disk_profile(disk).columns())
    if run.reference is not None:
        row.update(run.reference.columns())
    row["comparison_key"] = comparison_key(row)
    return row


def _sample_notes(rows: list[dict[str, Any]]) -> set[str]:
    """The notes of samples that miss their dataset's means even at the cap (once each)."""
    notes = set()
    for row in rows:
        if row.get("extra_json"):
            note = json.loads(row["extra_json"]).get("sample")
            if note:
                notes.add(str(note))
    return notes


def summary_lines(rows: list[dict[str, Any]], dataset: Dataset | None, where: str) -> list[str]:
    """What a session says at its end about its rows: the dataset, the counts, the reasons."""
    counts: dict[str, int] = {}
    for row in rows:
        counts[row["status"]] = counts.get(row["status"], 0) + 1
    lines = []
    if dataset is not None:
        bad = dataset.manifest.bad
        lines.append(
            f"dataset {dataset.name} ({dataset.fingerprint}): {dataset.n_images} images, "
            f"{dataset.codec}, {dataset.mean_megapixels:.2f} MP mean; {len(bad)} files excluded"
        )
        lines += [f"  excluded {entry.path}: {entry.reason}" for entry in bad[:10]]
        if len(bad) > 10:
            lines.append(f"  ... and {len(bad) - 10} more (imgbench dataset scan)")
    lines += [f"sample: {note}" for note in sorted(_sample_notes(rows))]
    reasons: dict[str, int] = {}
    for row in rows:
        if row["status"] == "skipped":
            reasons[row["reason"]] = reasons.get(row["reason"], 0) + 1
    summary = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
    lines.append(f"imgbench results ({summary}): {where}")
    lines += [f"  skipped x{n}: {r}" for r, n in sorted(reasons.items(), key=lambda kv: -kv[1])]
    return lines
