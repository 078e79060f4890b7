"""Formats built once per session and shared: by the format cases and by the loaders.

Built in the session's scratch folder (``CaseContext.scratch_dir``: on the dataset's disk, never
tmpfs), keyed by (dataset fingerprint, format, number of images), removed with the session.
Each built store's round trip (``imgbench.formats.roundtrip``) runs once per session, by the
first case (or worker process) that reads the store, and is kept in the scratch folder under the
store's own identity (its completion marker), so a store built again is checked again.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from imgbench.formats.base import (
    MARKER,
    META_DIR,
    BuildReport,
    FormatError,
    FormatSpec,
    build_format,
    read_meta,
)
from imgbench.formats.roundtrip import DecodeCheck, RoundTrip, decode_check, round_trip
from imgbench.measure.context import CaseContext


def _key(ctx: CaseContext, name: str) -> tuple[str, str, str, str]:
    """A store is of the session's sample: keyed by its identity (every worker draws the same)."""
    return ("built-format", ctx.dataset.fingerprint, name, ctx.sample().identity)


def target_path(ctx: CaseContext, name: str) -> Path:
    return ctx.scratch_dir() / f"{name}-{ctx.dataset.fingerprint}-{ctx.sample().identity}"


def _existing_or_built(ctx: CaseContext, spec: FormatSpec) -> BuildReport:
    """A complete build this session made already (in another worker process), or a new one."""
    target = target_path(ctx, spec.name)
    if target.is_dir():
        try:
            meta = read_meta(target)
        except FormatError:
            pass  # incomplete or foreign: built again below
        else:
            return BuildReport(target, meta, 0.0, list(meta.skipped))
    return build_format(spec, ctx.dataset.manifest.root, ctx.entries(), target)


def built_format(ctx: CaseContext, spec: FormatSpec) -> BuildReport:
    """The format of the session's sample, built once per session (again if its folder went)."""
    key = _key(ctx, spec.name)
    report: BuildReport = ctx.shared(key, lambda: _existing_or_built(ctx, spec))
    if not report.path.is_dir():
        ctx.forget(key)
        return built_format(ctx, spec)
    return report


def check_store(ctx: CaseContext, spec: FormatSpec, report: BuildReport) -> RoundTrip:
    """Read every record of a store built from this session's entries back (untimed)."""
    return round_trip(
        spec,
        report.path,
        Path(ctx.dataset.manifest.root),
        ctx.entries(),
        [path for path, _ in report.skipped],
    )


def _verdict_name(ctx: CaseContext, kind: str, report: BuildReport) -> str:
    """A verdict's name: the store's, plus its marker's inode and mtime (a rebuild changes them)."""
    marker = (report.path / META_DIR / MARKER).stat()
    store = f"{report.meta.name}-{ctx.dataset.fingerprint}-{ctx.sample().identity}"
    return f"{kind}-{store}-{marker.st_ino}-{marker.st_mtime_ns}"


def verified_format(ctx: CaseContext, spec: FormatSpec, report: BuildReport) -> RoundTrip:
    """The round trip of the session's store of ``spec`` (``report``), run once per store."""
    name = _verdict_name(ctx, "round-trip", report)
    return ctx.persisted(name, lambda: check_store(ctx, spec, report))


def verified_decodes(
    ctx: CaseContext, spec: FormatSpec, report: BuildReport, decode: Callable[[bytes], Any]
) -> DecodeCheck:
    """The first records of the session's store decoded with ``decode`` against the reference,
    once per store (every ``decode`` case decodes with Pillow)."""

    def check() -> DecodeCheck:
        root = Path(ctx.dataset.manifest.root)
        skipped = [path for path, _ in report.skipped]
        return decode_check(spec, report.path, root, ctx.entries(), skipped, decode)

    return ctx.persisted(_verdict_name(ctx, "decode-check", report), check)


def adopt_built(ctx: CaseContext, report: BuildReport, verdict: RoundTrip | None = None) -> None:
    """Keep a format a write case built as the session's copy, unless one exists already; the
    write case's round trip of it, when given, comes with it."""
    key = _key(ctx, report.meta.name)
    target = target_path(ctx, report.meta.name)
    if ctx.has(key) or target.exists():  # built already, here or in another worker process
        return
    report.path.rename(target)
    adopted = ctx.shared(
        key, lambda: BuildReport(target, report.meta, report.seconds, report.skipped)
    )
    if verdict is not None:  # the rename keeps the marker's inode: the same store, checked
        ctx.persisted(_verdict_name(ctx, "round-trip", adopted), lambda: verdict)


def concatenated(ctx: CaseContext) -> tuple[Path, list[int]]:
    """The sample's bytes in one file (the raw-file ceiling), and each image's size."""
    from imgbench.formats.libs.raw import build_concatenated

    sample = ctx.sample()
    entries = list(sample.entries)

    def build() -> tuple[Path, list[int]]:
        target = ctx.scratch_dir() / f"raw-{ctx.dataset.fingerprint}-{sample.identity}"
        return build_concatenated(Path(ctx.dataset.manifest.root), entries, target)

    name = f"concatenated-{ctx.dataset.fingerprint}-{sample.identity}"
    path, sizes = ctx.persisted(name, build)  # one build for all the session's worker processes
    if not path.is_file():
        raise FileNotFoundError(f"{path}: the session's concatenated file went away")
    return path, sizes
