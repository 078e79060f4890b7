"""What to export: the answer's pick (or the row a case id names), or, when its combination
cannot be written as a standalone module, the best candidate of the answer's list that can.

The pick is ``imgbench.answer.answers(frame)``'s, the one the Overview and ``imgbench report``
give: the first answer's ``best`` (its equivalent set, then its candidates, are the fallbacks,
best first). A row of the head-to-head final (``stage == "final"``) carries the same
parameters as the loader row it re-measured, so it exports the same way; the header cites both.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from imgbench.results.schema import json_object

FILES = "files"  # imgbench.loaders.pipeline.FILES
STAGES = ("loader", "final")


class ExportError(ValueError):
    """Nothing can be exported from these rows; the message says why and what to run."""


@dataclass(frozen=True)
class Choice:
    """The row to export, and the row asked for when it had to be replaced."""

    row: dict[str, Any]
    title: str | None = None  # the answer's title (machine, dataset, output)
    asked: dict[str, Any] | None = None  # the pick or --case row, when it is not ``row``
    why_not: str | None = None  # why ``asked`` cannot be exported
    asked_for: str = "the answer's pick"  # or "--case"
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (case id, reason) passed over


def params_of(row: Mapping[str, Any]) -> dict[str, Any]:
    return dict(json_object(row.get("params_json")))


def pipeline_of(params: Mapping[str, Any]) -> tuple[str, str]:
    """(augmentation key, recipe) of a loader row's ``pipeline`` parameter."""
    augment, _, recipe = str(params.get("pipeline") or "").partition(":")
    return augment, recipe or "train-classification"


def _not_a_folder_configuration(row: Mapping[str, Any], params: Mapping[str, Any]) -> str | None:
    """Why the row is not a loader reading an image folder, or None."""
    stage = row.get("stage")
    if stage not in STAGES:
        return f"a {stage} row is no loader configuration"
    if "accelerator_images_per_s" in params:
        return "an AU emulation row (its rate is the emulated accelerator's), not a configuration"
    if params.get("storage") == "s3" or row.get("storage") == "s3":
        return "it reads an S3 bucket imgbench filled and served: the export reads an image folder"
    fmt = str(params.get("format") or FILES)
    if fmt != FILES:
        return (
            f"its format {fmt!r} is a store built by imgbench's format builder "
            "(imgbench.formats), which the standalone module cannot build: it reads an image folder"
        )
    return None


def why_not_exportable(row: Mapping[str, Any]) -> str | None:
    """What the export cannot write for this row (naming what is missing), or None."""
    from imgbench.export.decoders import DECODERS
    from imgbench.export.loaders import LOADERS
    from imgbench.export.recipes import NoRecipeError, recipe_code

    library = str(row.get("library") or "")
    params = params_of(row)
    if reason := _not_a_folder_configuration(row, params):
        return reason
    if library not in LOADERS:
        return (
            f"no export template for the loader {library!r} (the export writes "
            f"{', '.join(sorted(LOADERS))})"
        )
    augment, recipe = pipeline_of(params)
    if library == "dali":
        if params.get("dali_source", "reader-file") != "reader-file":
            return "DALI's external source is fed by imgbench's format readers: no standalone form"
        return None
    decoder = str(params.get("decoder") or "")
    if decoder not in DECODERS:
        return f"no export template for the decoder {decoder!r}"
    if augment == "none":
        return "the decode-only pass-through is no training recipe"
    try:
        recipe_code(augment, recipe)
    except NoRecipeError as exc:
        return str(exc)
    return None


def _row_of(frame: pd.DataFrame, case_id: str, run_id: str | None = None) -> dict[str, Any]:
    rows = frame[frame["case_id"] == case_id]
    if run_id is not None and (rows["run_id"] == run_id).any():
        rows = rows[rows["run_id"] == run_id]
    if rows.empty:
        raise ExportError(f"no timed ok row with case id {case_id!r}")
    return dict(rows.sort_values("created_utc", kind="stable").iloc[-1])


def _ranked(answer: Any) -> list[Any]:
    """The answer's candidates, its equivalent set first when it has one, without repeats."""
    ordered = [answer.best, *getattr(answer, "equivalent", []), *answer.candidates]
    seen: set[str] = set()
    result = []
    for measured in ordered:
        if measured is not None and measured.case_id not in seen:
            seen.add(measured.case_id)
            result.append(measured)
    return result


def choose(frame: pd.DataFrame, case_id: str | None = None) -> Choice:
    """The row to export from ``frame`` (any statuses; timed ok rows count)."""
    from imgbench.answer import answers
    from imgbench.answer.rows import timed_ok

    ok = timed_ok(frame)
    if ok.empty:
        raise ExportError("no timed ok rows: run `imgbench run -k loader` (or `make bench`) first")
    found = answers(ok)
    asked: dict[str, Any] | None = None
    answer = next((a for a in found if a.best is not None), None)
    if case_id is not None:
        asked = _row_of(ok, case_id)
        answer = _answer_holding(found, asked) or answer
        reason = why_not_exportable(asked)
        if reason is None:
            return Choice(asked, answer.title if answer else None)
    elif answer is None:
        missing = "; ".join(m for a in found for m in a.missing) or "no loader rows"
        raise ExportError(f"no answer to export: {missing}")
    else:
        assert answer.best is not None
        asked = _row_of(ok, answer.best.case_id, answer.best.run_id)
        reason = why_not_exportable(asked)
        if reason is None:
            return Choice(asked, answer.title)
    skipped: list[tuple[str, str]] = [(str(asked["case_id"]), str(reason))]
    if answer is None:
        raise ExportError(f"{asked['case_id']} cannot be exported: {reason}")
    for measured in _ranked(answer):
        if measured.case_id == asked["case_id"]:
            continue
        row = _row_of(ok, measured.case_id, measured.run_id)
        why = why_not_exportable(row)
        if why is None:
            asked_for = "the answer's pick" if case_id is None else "the row --case named"
            return Choice(
                row,
                answer.title,
                asked=asked,
                why_not=reason,
                asked_for=asked_for,
                skipped=skipped,
            )
        skipped.append((measured.case_id, why))
    raise ExportError(
        f"{asked['case_id']} cannot be exported: {reason}; and no candidate of its answer can"
    )


def _answer_holding(found: list[Any], row: Mapping[str, Any]) -> Any:
    """The answer whose candidates hold the row's case id (its machine, dataset and output)."""
    for answer in found:
        with contextlib.suppress(AttributeError):
            if any(c.case_id == row.get("case_id") for c in _ranked(answer)):
                return answer
    return None
