"""What a result row is to the answer: a real loader configuration, an experiment or a ceiling.

The answer reads rows only (no stage is imported: the results schema is the contract). A loader
row's configuration comes from its ``params_json`` (``format``, ``decoder``, ``pipeline``,
``workers``) as ``imgbench.loaders.cases`` writes it. Rules, one place:

- an *experiment* measures something other than a training pipeline: a library whose name ends
  in ``experiment`` (the copy-on-access memory experiment), a row with an emulated accelerator
  step (``accelerator_images_per_s``: AU emulation, whose rate is the emulated GPU's), an in-RAM
  ceiling (``preload``: the pool in RAM before the first batch) or several training ranks'
  loaders at once (``ranks``: their total; imgbench.answer.headroom reads both);
- a *ceiling* is no choice a user can make: ``stage == "native"`` (tjbench) at full scale (a
  ``reduce`` parameter decodes a fraction of the pixels), and format rows of a ``raw*`` library
  (one big file read sequentially);
- a *disk pass* row comes from a disk session of `imgbench run` (a ``disk_pass`` parameter: cold
  reads on an emulated disk, or the real disk's cold pass): the disk's own question
  (``imgbench.answer.disk_advice``), never one of the main answer's configurations;
- *comparable work* is one machine, one dataset (its fingerprint fixes the codec), one task
  (``task``: classification, segmentation, crop-ocr; rows without the column are
  classification) and one output size (``megapixels_per_round`` over ``images_per_round``:
  224 x 224 for the training recipes, none for the decode-only pass-through, which is no
  training job).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias

import pandas as pd

from imgbench.results.schema import json_object

Row: TypeAlias = Mapping[str, Any] | pd.Series  # one result row: a record or a frame's row
DECODE_ONLY = "none"  # imgbench.loaders.pipeline.NO_AUGMENT
FILES = "files"  # imgbench.loaders.pipeline.FILES: the dataset's own image files
STORAGE_CEILING_PREFIX = "raw"
EXPERIMENT_SUFFIX = "experiment"
DISK_PASS = "disk_pass"  # imgbench.disks.catalog.DISK_PASS: a disk session's rows
# parameters of loader rows that are no single training pipeline a user picks (see the docstring)
NOT_A_PIPELINE = ("accelerator_images_per_s", "preload", "ranks")
REFERENCE_LOADER = "torch-dataloader"  # the loader the common default uses
CLASSIFICATION = "classification"  # the task of rows that name none (imgbench.augment.tasks)
# a legacy skipped row (before the plugin left them to their own session): not a real reason
OTHER_ENVIRONMENT_REASON = r"^runs in the \S+ environment"


def number(value: Any) -> float | None:
    """A finite float, or None (numpy scalars, NaN and None included)."""
    try:
        result = float(value)
    except (TypeError, ValueError):
        return None
    return result if math.isfinite(result) else None


def where(rows: pd.DataFrame, test: Callable[[Row], bool]) -> pd.Series:
    """A plain boolean mask of ``test`` per row (the store's columns are Arrow-backed, whose
    element-wise results do not combine with NumPy booleans; records are fast to walk)."""
    records = rows.to_dict("records")
    return pd.Series([bool(test(r)) for r in records], index=rows.index, dtype=bool)


def param_is(key: str, value: Any, default: Any = None) -> Callable[[Row], bool]:
    """A row test: ``params_json[key] == value``."""
    return lambda row: json_object(row.get("params_json")).get(key, default) == value


def timed_ok(frame: pd.DataFrame) -> pd.DataFrame:
    """Ok rows that measured images/s (instruction counts have none)."""
    if frame.empty:
        return frame
    measure = frame["measure"].fillna("wall") if "measure" in frame else "wall"
    ok = (frame["status"] == "ok") & (measure != "instructions")
    measured = pd.to_numeric(frame["images_per_s_median"], errors="coerce").notna().to_numpy()
    mask = ok.to_numpy(dtype=bool, na_value=False) & measured
    return frame[mask]


def newest_per_case(rows: pd.DataFrame) -> pd.DataFrame:
    """The newest row of each case (one run's figure, not a pool of runs)."""
    if rows.empty:
        return rows
    return rows.sort_values("created_utc", kind="stable").groupby("case_id").tail(1)


def by_machine_and_dataset(frame: pd.DataFrame) -> Iterator[pd.DataFrame]:
    """The timed ok rows of ``frame``, one group per machine and dataset, in order of first
    appearance: rows of different machines or datasets are never comparable work."""
    ok = timed_ok(frame)
    if not ok.empty:
        ok = ok[~where(ok, is_disk_pass)]
    if ok.empty:
        return
    ok = ok.assign(
        machine_id=ok["machine_id"].fillna("?").astype(str),
        dataset_fingerprint=ok["dataset_fingerprint"].fillna("?").astype(str),
    )
    for _, group in ok.groupby(["machine_id", "dataset_fingerprint"], sort=False):
        yield group


def is_disk_pass(row: Row) -> bool:
    """A row of a disk session (cold reads on one disk): the disk advice's, not the answer's."""
    return DISK_PASS in json_object(row.get("params_json"))


def is_experiment(row: Row) -> bool:
    params = json_object(row.get("params_json"))
    library = str(row.get("library") or "")
    return library.endswith(EXPERIMENT_SUFFIX) or any(p in params for p in NOT_A_PIPELINE)


def is_decode_only(row: Row) -> bool:
    """A loader row of the pass-through pipeline: full-size decodes, not a training job."""
    return json_object(row.get("params_json")).get("pipeline") == DECODE_ONLY


def task_of(row: Row) -> str:
    """The row's task: its ``task`` column, its case's ``task`` parameter, else classification."""
    task = row.get("task")
    if isinstance(task, str) and task:
        return task
    return str(json_object(row.get("params_json")).get("task") or CLASSIFICATION)


def is_classification(row: Row) -> bool:
    return task_of(row) == CLASSIFICATION


def is_ceiling(row: Row) -> bool:
    stage, library = row.get("stage"), str(row.get("library") or "")
    if stage == "native":
        return True
    return stage == "format" and library.startswith(STORAGE_CEILING_PREFIX)


def is_full_scale_ceiling(row: Row) -> bool:
    """A ceiling that did the same work as a full decode (no ``reduce``)."""
    return is_ceiling(row) and not json_object(row.get("params_json")).get("reduce")


def output_side(row: Row) -> int | None:
    """The side of the square images a loader row delivered (224), 0 for full-size decodes."""
    images, megapixels = (
        number(row.get("images_per_round")),
        number(row.get("megapixels_per_round")),
    )
    if not images or megapixels is None:
        return None
    return round(math.sqrt(megapixels * 1e6 / images))


@dataclass(frozen=True)
class Configuration:
    """What a user sets: reader (format), decoder, augmentation, loader, workers, allocator."""

    loader: str
    workers: int
    format: str
    decoder: str
    augment: str
    recipe: str
    knobs: tuple[str, ...]  # non-default loader settings (spawn, prefetch4, ...)
    allocator: str | None
    storage: str | None = None  # "s3" etc. when not the local disk
    start_method: str | None = None  # the DataLoader's worker start method (fork, spawn, ...)

    @classmethod
    def of(cls, row: Row) -> Configuration:
        params = json_object(row.get("params_json"))
        pipeline = str(params.get("pipeline") or "")
        augment, _, recipe = pipeline.partition(":")
        variant = str(row.get("variant") or "")
        allocator = row.get("allocator")
        storage, start = params.get("storage") or row.get("storage"), params.get("start_method")
        return cls(
            loader=str(row.get("library")),
            workers=int(number(row.get("workers")) or 0),
            format=str(params.get("format") or "?"),
            decoder=str(params.get("decoder") or "?"),
            augment=augment or "?",
            recipe=recipe,
            knobs=tuple(variant.split("+")[1:]),
            allocator=str(allocator) if isinstance(allocator, str) and allocator else None,
            storage=str(storage) if isinstance(storage, str) and storage != "local" else None,
            start_method=str(start) if start else None,
        )

    @property
    def is_common_default(self) -> bool:
        """Pillow + image folder + torchvision transforms + DataLoader, nothing tuned."""
        return (
            self.loader == REFERENCE_LOADER
            and self.format == FILES
            and self.decoder.startswith("pillow/")
            and self.augment.startswith("torchvision/")
            and not self.knobs
            and self.allocator in (None, "glibc")
            and self.recipe in ("", "train-classification")
        )

    @property
    def output_dtype(self) -> str:
        """uint8 for the recipes that stop before the float conversion, float32 otherwise."""
        return "uint8" if "uint8" in self.recipe else "float32"

    def label(self) -> str:
        parts = [
            f"reader {self.format}",
            f"decoder {self.decoder}",
            f"augmentation {self.augment}" + (f" ({self.recipe})" if self.recipe else ""),
            f"{self.output_dtype} output",
            f"loader {self.loader}",
            f"{self.workers} workers",
        ]
        if self.start_method and self.workers > 0:
            parts.append(f"start {self.start_method}")
        if self.knobs:
            parts.append(", ".join(self.knobs))
        if self.storage:
            parts.append(f"storage {self.storage}")
        if self.allocator:
            parts.append(f"allocator {self.allocator}")
        return " · ".join(parts)

    def short_label(self) -> str:
        """The chart's label: every dimension that tells two configurations apart, compactly."""
        parts = [
            self.loader,
            f"{self.workers} wk"
            + (f" {self.start_method}" if self.start_method and self.workers > 0 else ""),
            self.decoder,
            self.augment + (f" {self.recipe}" if self.recipe else ""),
            self.output_dtype,
            self.format,
        ]
        parts += list(self.knobs)
        if self.storage:
            parts.append(self.storage)
        if self.allocator not in (None, "glibc"):
            parts.append(str(self.allocator))
        return " · ".join(parts)


def legacy_environment_skip(frame: pd.DataFrame) -> pd.Series:
    """Skipped rows older sessions wrote for cases of another environment: no real reason."""
    reason = frame["reason"].fillna("").astype(str)
    return (frame["status"] == "skipped") & reason.str.contains(OTHER_ENVIRONMENT_REASON)


def problems(frame: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """Skipped and failed cases by real reason (status, stage, reason, cases), and how many
    legacy other-environment rows were left out."""
    legacy = legacy_environment_skip(frame)
    rows = frame[(frame["status"] != "ok") & ~legacy]
    columns = ["status", "stage", "reason", "cases"]
    if rows.empty:
        return pd.DataFrame(columns=columns), int(legacy.sum())
    table = (
        rows.groupby(["status", "stage", "reason"], dropna=False)
        .size()
        .rename("cases")
        .reset_index()
        .sort_values("cases", ascending=False, kind="stable")
        .reset_index(drop=True)
    )
    return table[columns], int(legacy.sum())
