"""Format cases: write each format, then read it back in every order, payload and cache state.

* ``write``: one timed round builds the format from the first N images (source files warm);
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

import atexit
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from imgbench.formats.base import (
    BuildReport,
    FormatSpec,
    Payload,
    build_format,
    format_files,
    open_format,
)
from imgbench.formats.registry import FORMATS, get_format
from imgbench.harness.cache import evict_and_check, warm
from imgbench.harness.case import Case, Workload
from imgbench.harness.context import CaseContext
from imgbench.profiles import Profile

SEED = 0  # shuffled order: the same permutation in every run
QUICK_FORMATS = ("folder", "lmdb", "tar", "parquet", "npy-packed")
SCRATCH_ENV = "IMGBENCH_FORMATS_DIR"  # where to build formats, instead of beside the dataset
_SCRATCH_PREFIX = ".imgbench-formats-"
_WARM_METHOD = "warm: every file of the format read once before timing"


def format_cases(profile: Profile) -> list[Case]:
    quick = profile.name == "quick"
    specs = [s for s in FORMATS if not quick or s.name in QUICK_FORMATS]
    caches = ("warm",) if quick else ("warm", "cold")
    orders = ("sequential",) if quick else ("sequential", "shuffled")
    byte_payloads = ("bytes",) if quick else ("bytes", "decode")
    cases: list[Case] = []
    for spec in specs:
        base = dict(stage="format", library=spec.library, variant=spec.variant)
        stored = "array" if spec.stores == "array" else "bytes"
        cases.append(
            Case(
                **base,  # type: ignore[arg-type]
                prepare=_prepare_write,
                params={
                    "format": spec.name,
                    "mode": "write",
                    "cache_state": "warm",
                    "order": "sequential",
                    "payload": stored,
                },
                requires=spec.requires,
                dist=spec.dist,
            )
        )
        payloads = ("array",) if spec.stores == "array" else byte_payloads
        for cache in caches:
            for order in orders:
                for payload in payloads:
                    cases.append(
                        Case(
                            **base,  # type: ignore[arg-type]
                            prepare=_prepare_read,
                            params={
                                "format": spec.name,
                                "mode": "read",
                                "cache_state": cache,
                                "order": order,
                                "payload": payload,
                                "threads": 1,
                            },
                            requires=spec.requires,
                            dist=spec.dist,
                        )
                    )
    for cache in caches:
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
            )
        )
    return cases


# -- the session's scratch folder and built formats -----------------------------------------------
_SCRATCH: Path | None = None
_BUILT: dict[tuple[str, str, int], BuildReport] = {}
_RAW: dict[tuple[str, int], tuple[Path, list[int]]] = {}


def _fs_type(path: Path) -> str:
    """File-system type of the mount holding ``path`` (from /proc/self/mounts), or ""."""
    best, kind = "", ""
    try:
        lines = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return ""
    resolved = str(path.resolve())
    for line in lines:
        parts = line.split()
        if len(parts) < 3:
            continue
        mount = parts[1].replace("\\040", " ")
        inside = resolved == mount or resolved.startswith(mount.rstrip("/") + "/")
        if inside and len(mount) >= len(best):
            best, kind = mount, parts[2]
    return kind


def choose_scratch_parent(dataset_root: Path) -> Path:
    """A writable folder on the dataset's disk, not tmpfs: temp dir first, then beside the data."""
    if os.environ.get(SCRATCH_ENV):
        return Path(os.environ[SCRATCH_ENV])
    candidates = [Path(tempfile.gettempdir()), dataset_root.parent, dataset_root]
    usable = [
        c
        for c in candidates
        if c.is_dir()
        and os.access(c, os.W_OK)
        and _fs_type(c) not in ("tmpfs", "ramfs", "devtmpfs")
    ]
    device = dataset_root.stat().st_dev
    same_disk = [c for c in usable if c.stat().st_dev == device]
    if same_disk:
        return same_disk[0]
    return usable[0] if usable else Path(tempfile.gettempdir())


def _remove_dead_scratch(parent: Path) -> None:
    """Scratch folders of sessions that were killed (their pid is gone)."""
    for folder in parent.glob(_SCRATCH_PREFIX + "*"):
        pid = folder.name[len(_SCRATCH_PREFIX) :].split("-")[0]
        if pid.isdigit() and int(pid) != os.getpid():
            try:
                os.kill(int(pid), 0)
            except ProcessLookupError:
                shutil.rmtree(folder, ignore_errors=True)
            except PermissionError:
                pass


def scratch_dir(ctx: CaseContext) -> Path:
    global _SCRATCH
    if _SCRATCH is None or not _SCRATCH.is_dir():
        parent = choose_scratch_parent(Path(ctx.dataset.manifest.root))
        parent.mkdir(parents=True, exist_ok=True)
        _remove_dead_scratch(parent)
        _SCRATCH = Path(tempfile.mkdtemp(prefix=f"{_SCRATCH_PREFIX}{os.getpid()}-", dir=parent))
        atexit.register(shutil.rmtree, _SCRATCH, ignore_errors=True)
    return _SCRATCH


def built_format(ctx: CaseContext, spec: FormatSpec) -> BuildReport:
    """The format of the first N images, built once per session."""
    entries = ctx.entries()
    key = (ctx.dataset.fingerprint, spec.name, len(entries))
    report = _BUILT.get(key)
    if report is None or not report.path.is_dir():
        target = scratch_dir(ctx) / f"{spec.name}-{ctx.dataset.fingerprint}-{len(entries)}"
        report = build_format(spec, ctx.dataset.manifest.root, entries, target)
        _BUILT[key] = report
    return report


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
    folder = scratch_dir(ctx) / f"write-{spec.name}"
    durations: list[float] = []
    last: dict[str, BuildReport] = {}
    extra: dict[str, Any] = {"order": "sequential", "payload": spec.stores}

    def before_round() -> None:
        shutil.rmtree(folder, ignore_errors=True)

    def write_all(_: object) -> None:
        start = time.perf_counter()
        last["report"] = build_format(spec, root, entries, folder / "out")
        durations.append(time.perf_counter() - start)

    def close() -> None:
        report = last.get("report")
        if report is None:
            return
        extra.update(_size_extra(report))
        extra["write_images_per_s"] = round(len(entries) / statistics.median(durations), 2)
        key = (ctx.dataset.fingerprint, spec.name, len(entries))
        if key not in _BUILT:  # the read cases reuse the last round's output
            target = scratch_dir(ctx) / f"{spec.name}-{ctx.dataset.fingerprint}-{len(entries)}"
            report.path.rename(target)
            _BUILT[key] = BuildReport(target, report.meta, report.seconds, report.skipped)
        shutil.rmtree(folder, ignore_errors=True)

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
class _ColdReads:
    """Close, evict and check, reopen: what makes every round of a cold case start from disk."""

    def __init__(self, files: list[Path]) -> None:
        self.files = files
        self.worst = 0.0
        self.method = ""

    def first_check(self) -> str | None:
        """None when eviction works here, else the reason the cold case must be skipped."""
        check = evict_and_check(self.files)
        self.method = check.method + "; reader closed and reopened (untimed) before every round"
        return None if check.ok else f"cold cache impossible here: {check.method}"

    def evict(self) -> None:
        check = evict_and_check(self.files)
        self.worst = max(self.worst, check.resident_after)
        if not check.ok:
            raise RuntimeError(f"cold round not cold: {check.method}")


def _prepare_read(ctx: CaseContext, case: Case) -> Workload:
    import pytest

    from imgbench.readers.pillow import PillowReader

    spec = _spec_of(case)
    cache, order, payload = (case.params[k] for k in ("cache_state", "order", "payload"))
    report = built_format(ctx, spec)
    files = format_files(report.path)
    cold = _ColdReads(files) if cache == "cold" else None
    if cold is not None and (reason := cold.first_check()):
        pytest.skip(reason)
    if cold is None:
        warm(files)
    state: dict[str, Any] = {"reader": open_format(spec, report.path), "it": None}
    count = len(state["reader"])
    decode = PillowReader().decode if payload == "decode" else None
    extra: dict[str, Any] = {**_size_extra(report), "order": order, "payload": payload}

    def stop_iteration() -> None:
        iterator = state["it"]
        state["it"] = None
        if iterator is not None and hasattr(iterator, "close"):
            iterator.close()  # releases a generator's cursor or file before the reader closes

    def before_round() -> None:
        stop_iteration()
        if cold is not None:
            state["reader"].close()
            cold.evict()
            extra["resident_after_evict_max"] = round(cold.worst, 4)
            state["reader"] = open_format(spec, report.path)
        if order == "sequential":
            state["it"] = iter(state["reader"])

    def close() -> None:
        stop_iteration()
        state["reader"].close()

    def get(i: int) -> tuple[Payload, int]:
        return state["reader"][i]

    def step(_: int) -> tuple[Payload, int]:
        return next(state["it"])

    fetch = step if order == "sequential" else get
    if decode is None:
        fn = fetch
    else:

        def fn(i: int) -> object:
            data, label = fetch(i)
            return decode(data), label  # type: ignore[arg-type]

    items = list(range(count))
    if order == "shuffled":
        items = [int(i) for i in np.random.default_rng(SEED).permutation(count)]
    megapixels = _megapixels(ctx, report, payload)
    return Workload(
        items=items,
        fn=fn,
        bytes_per_round=_payload_bytes(report),
        megapixels_per_round=megapixels,
        before_round=before_round,
        cache_method=cold.method if cold is not None else _WARM_METHOD,
        extra=extra,
        close=close,
        library_version=spec.version(),
    )


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
    import pytest

    from imgbench.formats.raw import build_concatenated

    entries = ctx.entries()
    key = (ctx.dataset.fingerprint, len(entries))
    if key not in _RAW or not _RAW[key][0].is_file():
        target = scratch_dir(ctx) / f"raw-{ctx.dataset.fingerprint}-{len(entries)}"
        _RAW[key] = build_concatenated(Path(ctx.dataset.manifest.root), entries, target)
    path, sizes = _RAW[key]
    cold = _ColdReads([path]) if case.params["cache_state"] == "cold" else None
    if cold is not None and (reason := cold.first_check()):
        pytest.skip(reason)
    if cold is None:
        warm([path])
    state: dict[str, Any] = {"handle": open(path, "rb", buffering=0)}  # noqa: SIM115
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
        if cold is not None:
            state["handle"].close()
            cold.evict()
            extra["resident_after_evict_max"] = round(cold.worst, 4)
            state["handle"] = open(path, "rb", buffering=0)  # noqa: SIM115
        state["handle"].seek(0)

    def read(size: int) -> bytes:
        return state["handle"].read(size)

    return Workload(
        items=sizes,
        fn=read,
        bytes_per_round=total,
        before_round=before_round,
        cache_method=cold.method if cold is not None else _WARM_METHOD,
        extra=extra,
        close=lambda: state["handle"].close(),
    )
