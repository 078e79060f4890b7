"""Round-trip verification: write every format, read every record back, compare with the source.

Bytes formats must return the source file's bytes exactly; array formats must return exactly the
array :func:`imgbench.formats.base.fixed_array` makes from the source. Labels must match too, by
random access and by sequential iteration.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import numpy as np
import typer

from imgbench.console import fail
from imgbench.formats.base import (
    FormatError,
    FormatSpec,
    build_format,
    class_names,
    fixed_array,
    open_format,
    read_keys,
)
from imgbench.formats.registry import FORMATS
from imgbench.harness.case import Case

if TYPE_CHECKING:
    from imgbench.datasets.manifest import ImageEntry, Manifest

MAX_MESSAGES = 5


@dataclass
class VerifyResult:
    name: str
    status: str  # ok | mismatch | skipped | error
    records: int = 0
    size_ratio: float | None = None
    write_s: float | None = None
    reason: str | None = None
    skipped_files: list[tuple[str, str]] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)


def unmet_requirement(spec: FormatSpec) -> str | None:
    """Why ``spec`` cannot run here (same check the harness applies to its cases)."""
    probe = Case(
        stage="format",
        library=spec.library,
        variant=spec.variant,
        prepare=lambda c, k: None,
        requires=spec.requires,
    )  # type: ignore[arg-type,return-value]
    return probe.unmet_requirement()


def _same(payload: object, expected: bytes | np.ndarray) -> bool:
    if isinstance(expected, bytes):
        return isinstance(payload, bytes) and payload == expected
    return (
        isinstance(payload, np.ndarray)
        and payload.dtype == expected.dtype
        and payload.shape == expected.shape
        and bool(np.array_equal(payload, expected))
    )


def verify_format(
    spec: FormatSpec, root: Path, entries: Sequence[ImageEntry], workdir: Path
) -> VerifyResult:
    """Build ``spec`` from ``entries`` under ``workdir`` and compare every record with its source."""
    reason = unmet_requirement(spec)
    if reason:
        return VerifyResult(spec.name, "skipped", reason=reason)
    try:
        report = build_format(spec, root, entries, Path(workdir) / spec.name, progress=False)
    except (FormatError, OSError, ValueError) as exc:
        return VerifyResult(spec.name, "error", reason=f"write failed: {exc}")
    result = VerifyResult(
        spec.name,
        "ok",
        records=report.meta.count,
        size_ratio=report.size_ratio,
        write_s=report.seconds,
        skipped_files=list(report.skipped),
    )
    classes = {name: i for i, name in enumerate(class_names(entries))}
    skipped = {path for path, _ in report.skipped}
    wanted = [
        (e.path, classes[e.label] if e.label is not None else -1)
        for e in entries
        if e.path not in skipped
    ]
    keys = read_keys(report.path)
    if keys != wanted:
        result.messages.append("record order or labels in the key list differ from the manifest")

    def expected(rel: str) -> bytes | np.ndarray:
        data = (Path(root) / rel).read_bytes()
        return data if spec.stores == "bytes" else fixed_array(data)

    def note(message: str) -> None:
        if len(result.messages) < MAX_MESSAGES:
            result.messages.append(message)
        result.status = "mismatch"

    try:
        with open_format(spec, report.path) as reader:
            if len(reader) != len(wanted):
                note(f"{len(reader)} records, expected {len(wanted)}")
            for i, (rel, label) in enumerate(wanted[: len(reader)]):
                payload, got = reader[i]
                if not _same(payload, expected(rel)):
                    note(f"record {i} ({rel}): payload differs from the source (random access)")
                if got != label:
                    note(f"record {i} ({rel}): label {got}, expected {label} (random access)")
            seen = 0
            for i, (payload, got) in enumerate(reader):
                seen += 1
                if i >= len(wanted):
                    continue
                rel, label = wanted[i]
                if not _same(payload, expected(rel)) or got != label:
                    note(f"record {i} ({rel}): differs when read sequentially")
            if seen != len(wanted):
                note(f"sequential iteration gave {seen} records, expected {len(wanted)}")
    except Exception as exc:  # a reader that breaks is a finding, not a crash of the command
        result.status = "error"
        result.reason = f"read failed: {type(exc).__name__}: {exc}"
    if result.messages and result.status == "ok":
        result.status = "mismatch"
    return result


def verify_all(
    manifest: Manifest, workdir: Path, *, names: Sequence[str] | None = None, limit: int = 0
) -> list[VerifyResult]:
    entries = manifest.entries[:limit] if limit else manifest.entries
    specs = [s for s in FORMATS if not names or s.name in names]
    return [verify_format(spec, manifest.root, entries, workdir) for spec in specs]


def _load_manifest(dataset: str) -> Manifest:
    try:
        from imgbench.datasets import load_dataset  # type: ignore[attr-defined]
    except ImportError:
        from imgbench.datasets.scan import scan

        return scan(Path(dataset))
    return load_dataset(dataset).manifest


def verify_command(
    dataset: Annotated[str, typer.Option("--dataset", help="a folder of images, or a recipe name")],
    formats: Annotated[
        list[str] | None,
        typer.Option("--format", "-f", help="only these formats (repeatable); default: all"),
    ] = None,
    max_images: Annotated[
        int, typer.Option("--max-images", help="verify the first N images only (0 = all)")
    ] = 0,
) -> None:
    """Write every storage format and check every record reads back identical, with its label."""
    from rich.console import Console
    from rich.table import Table

    from imgbench.datasets.manifest import DatasetError

    console = Console()
    try:
        manifest = _load_manifest(dataset)
    except DatasetError as exc:
        raise fail(exc) from None
    unknown = sorted(set(formats or ()) - {s.name for s in FORMATS})
    if unknown:
        raise fail(f"unknown format(s) {unknown}; known: {[s.name for s in FORMATS]}")
    with tempfile.TemporaryDirectory(prefix="imgbench-verify-") as tmp:
        results = verify_all(manifest, Path(tmp), names=formats, limit=max_images)
    table = Table(title=f"round trip of {manifest.root}")
    for column in ("format", "status", "records", "size ratio", "write s", "detail"):
        table.add_column(column)
    colours = {"ok": "green", "skipped": "yellow", "mismatch": "red", "error": "red"}
    for r in results:
        detail = r.reason or "; ".join(r.messages)
        if r.skipped_files:
            detail = (
                detail + "; " if detail else ""
            ) + f"{len(r.skipped_files)} source files skipped"
        table.add_row(
            r.name,
            f"[{colours[r.status]}]{r.status}[/]",
            str(r.records),
            f"{r.size_ratio:.3f}" if r.size_ratio is not None else "",
            f"{r.write_s:.2f}" if r.write_s is not None else "",
            detail,
        )
    console.print(table)
    for r in results:
        for path, why in r.skipped_files[:MAX_MESSAGES]:
            console.print(f"  {r.name}: skipped {path}: {why}")
    if any(r.status in ("mismatch", "error") for r in results):
        raise typer.Exit(1)
