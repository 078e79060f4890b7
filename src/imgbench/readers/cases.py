"""Reader cases: reader × codec × mode × threads (× reduce), and the native tjbench rows.

Modes: ``memory`` (encoded bytes preloaded, decode only), ``disk`` with a ``warm`` page cache
(every file read once before each round) or a ``cold`` one (evicted before each round and
checked with mincore, by the harness's CacheControl; where eviction does not work, e.g. tmpfs,
the case is skipped with the reason rather than reporting a warm figure as cold).

What runs comes from the profile's :class:`ReadPlan`. Every case verifies each image against
the reference decode before timing; images a reader gets wrong are left out of its timing and
listed in the row's ``extra_json.excluded_images``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from imgbench.errors import one_line
from imgbench.library import select
from imgbench.measure.case import Case, Workload, spec_case
from imgbench.measure.context import CaseContext
from imgbench.measure.errors import CaseFailed, Skip
from imgbench.profiles import Profile
from imgbench.readers.base import ContractError, ReaderSpec, check_contract
from imgbench.readers.plan import ReadPlan
from imgbench.readers.registry import build_reader, find_spec, readers
from imgbench.readers.verify import ReferenceCache, tolerance, verify_item

MEMORY = ("memory", None)
DISK_WARM = ("disk", "warm")
DISK_COLD = ("disk", "cold")
# reduce, (mode, cache), threads, batch_size
Variant = tuple[int | None, tuple[str, str | None], int | None, int | None]


def _variants(spec: ReaderSpec, plan: ReadPlan, profile: Profile, codec: str) -> list[Variant]:
    if spec.batched:  # lists of images per call, decoded from memory
        return [(None, MEMORY, t, b) for b in plan.batch_sizes for t in plan.batch_threads]
    memory = profile.thread_modes if plan.memory_threads is None else plan.memory_threads
    disk = profile.thread_modes if plan.disk_threads is None else plan.disk_threads
    if plan.disk_codecs is not None and codec not in plan.disk_codecs:
        disk = ()
    if spec.output != "full":  # reduced and resize variants: decode work only, from memory
        return [(r, MEMORY, t, None) for r in plan.reduces for t in memory]
    return [(None, MEMORY, t, None) for t in memory] + [
        (None, m, t, None) for m in (DISK_WARM, DISK_COLD) for t in disk
    ]


def reader_cases(profile: Profile) -> list[Case]:
    plan = profile.plan(ReadPlan)
    specs = select(readers(), plan.libraries)
    cases: list[Case] = []
    for codec in plan.codecs:  # codec outermost: cases of one codec share reference decodes
        for spec in specs:
            for reduce, (mode, cache), threads, batch in _variants(spec, plan, profile, codec):
                params: dict[str, Any] = {"codec": codec, "mode": mode, "threads": threads}
                if cache is not None:  # memory mode has none (the row's cache_state null)
                    params["cache_state"] = cache
                if reduce is not None:
                    params["reduce"] = reduce
                if batch is not None:
                    params["batch_size"] = batch
                cases.append(
                    spec_case(
                        spec,
                        stage="read",
                        prepare=prepare_reader,
                        params=params,
                        check=_reader_check(spec, codec, reduce),
                    )
                )
        if plan.native and codec == "jpeg":
            cases += native_cases(plan)
    return cases


def native_cases(plan: ReadPlan) -> list[Case]:
    from imgbench.readers.native_cases import tjbench_case

    return [tjbench_case(None), *(tjbench_case(r) for r in plan.reduces)]


def _reader_check(spec: ReaderSpec, codec: str, reduce: int | None) -> Callable[[], str | None]:
    def check() -> str | None:
        if codec not in spec.codecs:
            return f"{spec.library}/{spec.variant} does not decode {codec}"
        try:
            build_reader(spec, reduce=reduce)
        except Exception as exc:
            return f"{spec.library}/{spec.variant}: {one_line(exc)}"
        return None

    return check


def _output_pixels(entry: Any, output: str, reduce: Any) -> int:
    """Pixels of the decoded image: full size, or each side divided by ``reduce``, rounded up."""
    if output == "full":
        return int(entry.width * entry.height)
    factor = int(reduce or 1)
    return (-(-entry.width // factor)) * (-(-entry.height // factor))


def _reader_extra(
    spec: ReaderSpec, reader: Any, codec: str, mode: str, reduce: Any
) -> dict[str, Any]:
    """What the row says about the reader: its tolerance, output, call, note, the adapter's own
    record (spdl: FFmpeg), the reduced target, pillow-simd's verified build."""
    extra: dict[str, Any] = {
        "verify_tolerance_mae": tolerance(codec, spec.output),
        "output": spec.output,
        "call": spec.disk_call if mode == "disk" else "decode(bytes)",
    }
    if spec.note:
        extra["note"] = spec.note
    extra.update(getattr(reader, "extra", None) or {})
    if reduce:
        extra["target"] = f"ceil(width/{reduce}) x ceil(height/{reduce})"
    if spec.library == "pillow-simd":
        from imgbench.envs import pillow_simd_facts

        extra["verified_build"] = pillow_simd_facts()
    return extra


def prepare_reader(ctx: CaseContext, case: Case) -> Workload:

    from imgbench.measure.cache import CacheControl

    spec = find_spec(case.library, case.variant)
    codec, mode = case.params["codec"], case.params["mode"]
    reduce = case.params.get("reduce")
    encoded = ctx.encoded(codec)
    if not encoded:
        raise Skip(f"dataset {ctx.dataset.name} has no {codec} images")
    reader: Any = build_reader(spec, reduce=reduce, threads=case.threads)
    fn = reader.decode if mode == "memory" else reader.read
    references = ctx.shared(  # decoded once per session, kept on disk for worker processes
        "reader-references", lambda: ReferenceCache(folder=ctx.scratch_dir() / "references")
    )
    kept, excluded = [], []
    for entry, data in encoded:  # verification on every image, outside the timing
        item = data if mode == "memory" else str(ctx.path(entry))
        verdict = verify_item(
            fn,
            item,
            path=entry.path,
            data=data,
            key=entry.sha256,
            codec=codec,
            output=spec.output,
            reduce=reduce,
            references=references,
        )
        if verdict.ok:
            kept.append((entry, data, item))
        else:
            excluded.append({"path": entry.path, "reason": verdict.detail})
    if not kept:
        first = excluded[0]
        raise CaseFailed(
            f"{case.library}/{case.variant} failed verification on all {len(excluded)} "
            f"{codec} images, e.g. {first['path']}: {first['reason']}",
        )
    extra: dict[str, Any] = {
        "verified_images": len(kept),
        "excluded_images": excluded,
        **_reader_extra(spec, reader, codec, mode, reduce),
    }
    output_pixels = sum(_output_pixels(entry, spec.output, reduce) for entry, _, _ in kept)
    workload = Workload(
        items=[item for _, _, item in kept],
        fn=fn,
        bytes_per_round=sum(len(data) for _, data, _ in kept),
        megapixels_per_round=output_pixels / 1e6,
        extra=extra,
    )
    if "batch_size" in case.params:
        pairs = [(entry, data) for entry, data, _ in kept]
        _batch_rounds(workload, reader, pairs, int(case.params["batch_size"]))
    if mode == "memory":
        workload.cache_method = "n/a: bytes preloaded in memory"
    else:
        cache = CacheControl(case.params["cache_state"], [ctx.path(e) for e, _, _ in kept])
        reason = cache.start()
        if reason:
            raise Skip(reason)
        workload.cache, workload.before_round = cache, cache.before_round
    return workload


def _batch_rounds(
    workload: Workload, reader: Any, kept: list[tuple[Any, bytes]], size: int
) -> None:
    """A batched reader's rounds: lists of ``size`` verified images per ``decode_batch`` call,
    the last list filled up from the start, so every call decodes a full batch and a round
    covers every image at least once. Each batch's outputs are checked once, untimed."""
    count = -(-len(kept) // size)
    flat = [kept[i % len(kept)] for i in range(count * size)]
    groups = [flat[i * size : (i + 1) * size] for i in range(count)]
    workload.items = [[data for _, data in group] for group in groups]
    workload.fn = reader.decode_batch
    workload.images_per_item = size
    workload.bytes_per_round = sum(len(data) for _, data in flat)
    workload.megapixels_per_round = sum(entry.width * entry.height for entry, _ in flat) / 1e6
    workload.extra["call"] = f"decode_batch(list of {size} bytes)"
    for group, items in zip(groups, workload.items, strict=True):
        outputs = reader.decode_batch(items)
        if len(outputs) != size:
            raise CaseFailed(f"decode_batch returned {len(outputs)} images for {size}")
        for (entry, _), out in zip(group, outputs, strict=True):
            try:
                check_contract(out, who=entry.path, expected_shape=(entry.height, entry.width))
            except ContractError as exc:
                raise CaseFailed(f"batched decode: {exc}") from exc
