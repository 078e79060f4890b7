"""Formats built once per session and shared: by the format cases and by the loaders.

Built in the session's scratch folder (``CaseContext.scratch_dir``: on the dataset's disk, never
tmpfs), keyed by (dataset fingerprint, format, number of images), removed with the session.
"""

from __future__ import annotations

from pathlib import Path

from imgbench.formats.base import BuildReport, FormatSpec, build_format
from imgbench.harness.context import CaseContext


def _key(ctx: CaseContext, name: str) -> tuple[str, str, str, int]:
    return ("built-format", ctx.dataset.fingerprint, name, len(ctx.entries()))


def target_path(ctx: CaseContext, name: str) -> Path:
    return ctx.scratch_dir() / f"{name}-{ctx.dataset.fingerprint}-{len(ctx.entries())}"


def built_format(ctx: CaseContext, spec: FormatSpec) -> BuildReport:
    """The format of the first N images, built once per session (again if its folder went)."""
    key = _key(ctx, spec.name)
    report: BuildReport = ctx.shared(
        key,
        lambda: build_format(
            spec, ctx.dataset.manifest.root, ctx.entries(), target_path(ctx, spec.name)
        ),
    )
    if not report.path.is_dir():
        ctx.forget(key)
        return built_format(ctx, spec)
    return report


def adopt_built(ctx: CaseContext, report: BuildReport) -> None:
    """Keep a format a write case built as the session's copy, unless one exists already."""
    key = _key(ctx, report.meta.name)
    if ctx.has(key):
        return
    target = target_path(ctx, report.meta.name)
    report.path.rename(target)
    ctx.shared(key, lambda: BuildReport(target, report.meta, report.seconds, report.skipped))


def concatenated(ctx: CaseContext) -> tuple[Path, list[int]]:
    """The first N images' bytes in one file (the raw-file ceiling), and each image's size."""
    from imgbench.formats.raw import build_concatenated

    entries = ctx.entries()
    key = ("concatenated", ctx.dataset.fingerprint, len(entries))

    def build() -> tuple[Path, list[int]]:
        target = ctx.scratch_dir() / f"raw-{ctx.dataset.fingerprint}-{len(entries)}"
        return build_concatenated(Path(ctx.dataset.manifest.root), entries, target)

    path, sizes = ctx.shared(key, build)
    if not path.is_file():
        ctx.forget(key)
        return concatenated(ctx)
    return path, sizes
