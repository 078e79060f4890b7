"""Round-trip verification: write every format, read every record back, compare with the source.

Bytes formats must return the source file's bytes exactly; array formats must return exactly the
array :func:`imgbench.formats.base.fixed_array` makes from the source. Labels must match too, by
random access and by sequential iteration.

The checks only, free of the CLI stack (typer, rich) like every stage's checks; the command and
its table live in ``imgbench.formats.verify_cli``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from imgbench.formats import registry
from imgbench.formats.base import (
    FormatError,
    FormatSpec,
    build_format,
    class_names,
    fixed_array,
    open_format,
    read_keys,
)
from imgbench.harness.case import Case

if TYPE_CHECKING:
    from imgbench.datasets.manifest import ImageEntry, Manifest

MAX_MESSAGES = 5


@dataclass
class VerifyResult:
    """One format's round trip: its status and what differed."""

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
        prepare=None,  # type: ignore[arg-type]  # a requirement probe is never prepared
        requires=spec.requires,
    )
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
    """Round-trip each format (all, or ``names``) on the first ``limit`` entries (0: all)."""
    entries = manifest.entries[:limit] if limit else manifest.entries
    specs = [s for s in registry.formats() if not names or s.name in names]
    return [verify_format(spec, manifest.root, entries, workdir) for spec in specs]


def load_manifest(dataset: str) -> Manifest:
    """The manifest of ``dataset``, a folder of images or a recipe name (DatasetError if not)."""
    from imgbench.datasets import load_dataset

    return load_dataset(dataset).manifest
