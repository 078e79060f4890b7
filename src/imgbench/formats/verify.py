"""Round-trip verification: write every format, read every record back, compare with the source.

Bytes formats must return the source file's bytes exactly; array formats must return exactly the
array :func:`imgbench.formats.base.fixed_array` makes from the source. Labels must match too, by
random access and by sequential iteration. The comparison is ``imgbench.formats.roundtrip``'s,
the one the format cases run before timing.

The checks only, free of the CLI stack (typer, rich) like every stage's checks; the command and
its table live in ``imgbench.formats.verify_cli``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from imgbench.formats import registry
from imgbench.formats.base import FormatError, FormatSpec, build_format
from imgbench.formats.roundtrip import round_trip
from imgbench.measure.case import Case

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
        environment=spec.environment,
    )
    return probe.unmet_requirement()


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
    trip = round_trip(
        spec,
        report.path,
        root,
        entries,
        [path for path, _ in report.skipped],
        max_messages=MAX_MESSAGES,
    )
    result.messages = trip.messages
    if trip.error is not None:  # a reader that breaks is a finding, not a crash of the command
        result.status = "error"
        result.reason = f"read failed: {trip.error}"
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
