"""Format cases: write each format, then read it back in every order, payload and cache state.

* ``write``: one timed round builds the format from the session's sample (source files warm);
  ``extra`` has bytes on disk, the ratio to the source bytes and the images/s written.
* ``read``: order (sequential iteration / shuffled random access, fixed seed) x payload (the
  stored bytes alone / bytes + Pillow decode; formats of decoded arrays have one payload,
  ``array``) x cache (warm: every file read once before timing; cold: before every round the
  reader is closed, every file of the format evicted and checked with mincore, and the reader
  reopened, all untimed). Where eviction cannot work (tmpfs), the cold case is skipped with why.
* ``raw-file``: the same bytes read from one concatenated file with plain reads: the ceiling.

Formats are built once per session per (dataset fingerprint, format, N) in a scratch folder on
the dataset's disk (never tmpfs, where cold reads are impossible), removed at exit.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import numpy as np

from imgbench.formats.base import (
    BuildReport,
    FormatSpec,
    build_format,
    format_files,
    open_format,
)
from imgbench.formats.plan import FormatPlan
from imgbench.formats.reads import StoreReads
from imgbench.formats.registry import formats, get_format
from imgbench.formats.session import (
    adopt_built,
    built_format,
    check_store,
    concatenated,
    verified_decodes,
    verified_format,
)
from imgbench.library import select
from imgbench.measure.cache import CacheControl, warm
from imgbench.measure.case import Case, Workload, spec_case
from imgbench.measure.context import CaseContext
from imgbench.measure.errors import CaseFailed, Skip
from imgbench.profiles import Profile

SEED = 0  # shuffled order: the same permutation in every run


LOCAL = {
    "storage": "local"
}  # the row's storage column (not a parameter: case ids stay as they were)


def format_cases(profile: Profile) -> list[Case]:
    from imgbench.formats.s3_cases import s3_cases

    plan = profile.plan(FormatPlan)
    selected = select(formats(), plan.libraries)
    cases = _local_cases(plan, selected) if "local" in plan.storages else []
    if "s3" in plan.storages:
        cases += s3_cases(plan, {spec.name for spec in selected})
    return cases


def _local_cases(plan: FormatPlan, selected: tuple[FormatSpec, ...]) -> list[Case]:
    cases: list[Case] = []
    for spec in selected:
        stored = "array" if spec.stores == "array" else "bytes"
        write = {"format": spec.name, "mode": "write", "cache_state": "warm"}
        write |= {"order": "sequential", "payload": stored}
        cases.append(
            spec_case(spec, stage="format", prepare=_prepare_write, params=write, columns=LOCAL)
        )
        payloads = ("array",) if spec.stores == "array" else plan.payloads
        for cache in plan.caches:
            for order in plan.orders:
                for payload in payloads:
                    params: dict[str, Any] = {"format": spec.name, "mode": "read"}
                    params |= {"cache_state": cache, "order": order, "payload": payload}
                    params["threads"] = 1
                    cases.append(
                        spec_case(
                            spec,
                            stage="format",
                            prepare=_prepare_read,
                            params=params,
                            columns=LOCAL,
                        )
                    )
    if plan.raw_ceiling:
        for cache in plan.caches:
            cases.append(
                Case(
                    stage="format",
                    library="raw-file",
                    variant="concatenated-sequential",
                    prepare=_prepare_raw,
                    params={
                        "format": "raw-file",
                        "mode": "read",
                        "cache_state": cache,
                        "order": "sequential",
                        "payload": "bytes",
                        "threads": 1,
                    },
                    columns=LOCAL,
                )
            )
    return cases


def _spec_of(case: Case) -> FormatSpec:
    return get_format(case.params["format"])


def _size_extra(report: BuildReport) -> dict[str, Any]:
    return {
        "format": report.meta.name,
        "records": report.meta.count,
        "bytes_on_disk": report.meta.bytes_on_disk,
        "source_bytes": report.meta.source_bytes,
        "size_ratio": round(report.size_ratio, 4),
        "skipped_files": len(report.skipped),
        "skipped_examples": [f"{p}: {r}" for p, r in report.skipped[:3]],
    }


# -- write ---------------------------------------------------------------------------------------
def _prepare_write(ctx: CaseContext, case: Case) -> Workload:
    spec = _spec_of(case)
    entries = ctx.entries()
    root = Path(ctx.dataset.manifest.root)
    warm(root / e.path for e in entries)
    folder = ctx.scratch_dir() / f"write-{spec.name}"
    durations: list[float] = []
    syncs: list[float] = []
    last: dict[str, BuildReport] = {}
    extra: dict[str, Any] = {"order": "sequential", "payload": spec.stores}

    def before_round() -> None:
        ctx.discard(folder)  # set aside: deleting slows the next round's file creations

    def write_all(_: object) -> None:
        # a round that fails leaves no report: close() then checks nothing, and the row names
        # the round's error (a full disk's ENOSPC), not the missing output of an earlier round
        last.pop("report", None)
        start = time.perf_counter()
        last["report"] = build_format(spec, root, entries, folder / "out")
        durations.append(time.perf_counter() - start)
        syncs.append(last["report"].sync_seconds)

    def close() -> None:

        report = last.get("report")
        if report is None:
            return
        extra.update(_size_extra(report))
        extra["write_images_per_s"] = round(len(entries) / statistics.median(durations), 2)
        # the disk's flush, apart: the writes moved 10-17% between sessions with it here
        extra["sync_s_median"] = round(statistics.median(syncs), 6)
        shares = [sync / whole for sync, whole in zip(syncs, durations, strict=True)]
        extra["sync_share"] = round(statistics.median(shares), 4)
        # the output exists only after a timed round: the last one is read back here, untimed
        verdict = check_store(ctx, spec, report)
        extra["verified_records"] = verdict.records
        adopt_built(ctx, report, verdict)  # the read cases reuse the last round's output
        ctx.discard(folder)
        if not verdict.ok:
            raise CaseFailed(verdict.reason())

    return Workload(
        items=[0],
        fn=write_all,
        images_per_item=len(entries),
        bytes_per_round=sum(e.bytes for e in entries),
        megapixels_per_round=0.0,
        before_round=before_round,
        cache_method="source files warm; output fsynced before the completion marker",
        extra=extra,
        close=close,
        library_version=spec.version(),
    )


# -- read ----------------------------------------------------------------------------------------
def _prepare_read(ctx: CaseContext, case: Case) -> Workload:

    from imgbench.readers.libs.pillow import PillowReader

    spec = _spec_of(case)
    cache_state, order, payload = (case.params[k] for k in ("cache_state", "order", "payload"))
    report = built_format(ctx, spec)
    checked = _checked_store(ctx, spec, report, payload)
    # each round evicts through the cache control, which reopens the reader (bound late)
    reads = StoreReads(
        order, lambda: open_format(spec, report.path), lambda _: cache.before_round()
    )
    cache = CacheControl(
        cache_state,
        format_files(report.path),
        rewarm=False,
        reopen=(reads.close_reader, reads.reopen),
    )
    if reason := cache.start():  # before the reader maps or caches anything
        raise Skip(reason)
    reads.reopen()
    count = len(reads.reader)
    extra: dict[str, Any] = {**_size_extra(report), "order": order, "payload": payload, **checked}
    fetch = reads.fetch()
    fn: Callable[[int], object] = fetch
    if payload == "decode":
        decoder = PillowReader().decode

        def fetch_and_decode(i: int) -> object:
            data, label = fetch(i)
            return decoder(cast(bytes, data)), label  # a bytes format: its payloads are bytes

        fn = fetch_and_decode

    items = list(range(count))
    if order == "shuffled":
        items = [int(i) for i in np.random.default_rng(SEED).permutation(count)]
    return Workload(
        items=items,
        fn=fn,
        bytes_per_round=_payload_bytes(report),
        megapixels_per_round=_megapixels(ctx, report, payload),
        before_round=reads.before_round,
        cache=cache,
        extra=extra,
        close=reads.close,
        library_version=spec.version(),
    )


def _checked_store(
    ctx: CaseContext, spec: FormatSpec, report: BuildReport, payload: str
) -> dict[str, Any]:
    """The store's records verified (and, for a decode payload, decoded) once per built store,
    before any timing: the counts for the row, or CaseFailed naming the problem."""
    from imgbench.readers.libs.pillow import PillowReader

    verdict = verified_format(ctx, spec, report)
    if not verdict.ok:
        raise CaseFailed(verdict.reason())
    checked: dict[str, Any] = {"verified_records": verdict.records}
    if payload == "decode":
        decoded = verified_decodes(ctx, spec, report, PillowReader().decode)
        if not decoded.ok:
            raise CaseFailed(f"{spec.name}: decode check failed: {decoded.problem}")
        checked["verified_decodes"] = decoded.records
    return checked


def _payload_bytes(report: BuildReport) -> int:
    shape = report.meta.array_shape
    if shape is not None:
        return report.meta.count * int(np.prod(shape))
    return report.meta.source_bytes


def _megapixels(ctx: CaseContext, report: BuildReport, payload: str) -> float:
    if payload == "array" and report.meta.array_shape is not None:
        h, w, _ = report.meta.array_shape
        return report.meta.count * h * w / 1e6
    if payload == "decode":
        skipped = {p for p, _ in report.skipped}
        return sum(e.megapixels for e in ctx.entries() if e.path not in skipped)
    return 0.0


# -- the raw ceiling -----------------------------------------------------------------------------
def _prepare_raw(ctx: CaseContext, case: Case) -> Workload:

    path, sizes = concatenated(ctx)
    state: dict[str, Any] = {}

    def reopen() -> None:
        state["handle"] = open(path, "rb", buffering=0)  # noqa: SIM115

    cache = CacheControl(
        case.params["cache_state"],
        [path],
        rewarm=False,
        reopen=(lambda: state["handle"].close(), reopen),
    )
    if reason := cache.start():
        raise Skip(reason)
    reopen()
    total = sum(sizes)
    extra: dict[str, Any] = {
        "format": "raw-file",
        "records": len(sizes),
        "bytes_on_disk": path.stat().st_blocks * 512,
        "source_bytes": total,
        "size_ratio": round(path.stat().st_blocks * 512 / total, 4) if total else None,
        "order": "sequential",
        "payload": "bytes",
    }

    def before_round() -> None:
        cache.before_round()
        state["handle"].seek(0)

    def read(size: int) -> bytes:
        data: bytes = state["handle"].read(size)
        if len(data) < size:  # a calibrated round reads the file more than once
            state["handle"].seek(0)
            data = state["handle"].read(size)
        return data

    return Workload(
        items=sizes,
        fn=read,
        bytes_per_round=total,
        before_round=before_round,
        cache=cache,
        extra=extra,
        close=lambda: state["handle"].close(),
    )
