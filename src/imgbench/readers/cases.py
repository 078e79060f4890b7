"""Reader cases: reader × codec × mode × threads (× reduce), and the native tjbench rows.

Modes: ``memory`` (encoded bytes preloaded, decode only), ``disk`` with a ``warm`` page cache
(every file read once before each round) or a ``cold`` one (evicted before each round with
``posix_fadvise`` and checked with ``mincore``; where eviction does not work, e.g. tmpfs, the
case is skipped with the reason rather than reporting a warm figure as cold).

What each profile runs is decided here, from ``profile.name`` (see ``plan_for``). Every case
verifies each image against the reference decode before timing; images a reader gets wrong are
left out of its timing and listed in the row's ``extra_json.excluded_images``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from imgbench.harness.case import Case, Workload
from imgbench.harness.context import CaseContext
from imgbench.profiles import Profile
from imgbench.readers.base import CODECS, ReaderSpec
from imgbench.readers.registry import READERS, build_reader, find_spec
from imgbench.errors import one_line
from imgbench.readers.verify import tolerance, verify_item

MEMORY = ("memory", None)
DISK_WARM = ("disk", "warm")
DISK_COLD = ("disk", "cold")


@dataclass(frozen=True)
class Plan:
    """How much of the reader matrix a profile runs."""

    codecs: tuple[str, ...]
    specs: tuple[ReaderSpec, ...]
    memory_threads: tuple[int | None, ...]
    disk_threads: tuple[int | None, ...]  # () = no disk modes
    reduces: tuple[int, ...]  # factors for reduced and resize variants; () = none
    native: bool


def plan_for(profile: Profile) -> Plan:
    """quick: a few readers, memory, JPEG + PNG; default: all readers and codecs, disk modes
    single-threaded, reduce 4, tjbench; full: disk modes in every thread mode and reduce 2 and 4."""
    threads = tuple(profile.thread_modes)
    if profile.name == "quick":
        quick = tuple(s for s in READERS if s.quick)
        return Plan(("jpeg", "png"), quick, threads, (), (), native=False)
    if profile.name == "full":
        return Plan(CODECS, READERS, threads, threads, (2, 4), native=True)
    return Plan(CODECS, READERS, threads, (1,), (4,), native=True)


def reader_cases(profile: Profile) -> list[Case]:
    plan = plan_for(profile)
    cases: list[Case] = []
    for codec in plan.codecs:  # codec outermost: cases of one codec share reference decodes
        for spec in plan.specs:
            if spec.output == "full":
                variants: list[tuple[int | None, tuple[str, str | None], int | None]] = [
                    (None, mode, t) for t in plan.memory_threads for mode in (MEMORY,)
                ]
                variants += [
                    (None, m, t) for m in (DISK_WARM, DISK_COLD) for t in plan.disk_threads
                ]
            else:  # reduced and resize variants: decode work only, from memory
                variants = [(r, MEMORY, t) for r in plan.reduces for t in plan.memory_threads]
            for reduce, (mode, cache_state), threads in variants:
                params: dict[str, Any] = {"codec": codec, "mode": mode, "threads": threads}
                if cache_state is not None:  # memory mode has none (the row's cache_state null)
                    params["cache_state"] = cache_state
                if reduce is not None:
                    params["reduce"] = reduce
                cases.append(
                    Case(
                        stage="read",
                        library=spec.library,
                        variant=spec.variant,
                        prepare=prepare_reader,
                        params=params,
                        requires=spec.requires,
                        dist=spec.dist,
                        environment=spec.environment,
                        check=_reader_check(spec, codec, reduce),
                    )
                )
        if plan.native and codec == "jpeg":
            cases += native_cases(plan)
    return cases


def native_cases(plan: Plan) -> list[Case]:
    from imgbench.native.cases import tjbench_case

    return [tjbench_case(None), *(tjbench_case(r) for r in plan.reduces)]


def _reader_check(spec: ReaderSpec, codec: str, reduce: int | None) -> Callable[[], str | None]:
    def check() -> str | None:
        if codec not in spec.codecs:
            return f"{spec.library}/{spec.variant} does not decode {codec}"
        try:
            build_reader(spec, reduce=reduce)
        except Exception as exc:
            return f"{spec.library}/{spec.variant}: {one_line(exc)}"
        if spec.library == "pillow-simd":
            from imgbench.envs import pillow_simd_facts, pillow_simd_problem

            problem = pillow_simd_problem(pillow_simd_facts())
            if problem:
                return f"pillow-simd: {problem}"
        return None

    return check


def prepare_reader(ctx: CaseContext, case: Case) -> Workload:
    import pytest

    spec = find_spec(case.library, case.variant)
    codec, mode = case.params["codec"], case.params["mode"]
    reduce = case.params.get("reduce")
    encoded = ctx.encoded(codec)
    if not encoded:
        pytest.skip(f"dataset {ctx.dataset.name} has no {codec} images")
    reader: Any = build_reader(spec, reduce=reduce, threads=case.threads)
    fn = reader.decode if mode == "memory" else reader.read
    kept, excluded, output_pixels = [], [], 0
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
        )
        if not verdict.ok:
            excluded.append({"path": entry.path, "reason": verdict.detail})
            continue
        kept.append((entry, data, item))
        if spec.output == "full":
            output_pixels += entry.width * entry.height
        else:
            output_pixels += (-(-entry.width // reduce)) * (-(-entry.height // reduce))
    if not kept:
        first = excluded[0]
        pytest.fail(
            f"{case.library}/{case.variant} failed verification on all {len(excluded)} "
            f"{codec} images, e.g. {first['path']}: {first['reason']}",
            pytrace=False,
        )
    extra: dict[str, Any] = {
        "verified_images": len(kept),
        "excluded_images": excluded,
        "verify_tolerance_mae": tolerance(codec, spec.output),
        "output": spec.output,
        "call": spec.disk_call if mode == "disk" else "decode(bytes)",
    }
    if spec.note:
        extra["note"] = spec.note
    if reduce:
        extra["target"] = f"ceil(width/{reduce}) x ceil(height/{reduce})"
    if spec.library == "pillow-simd":
        from imgbench.envs import pillow_simd_facts

        extra["verified_build"] = pillow_simd_facts()
    workload = Workload(
        items=[item for _, _, item in kept],
        fn=fn,
        bytes_per_round=sum(len(data) for _, data, _ in kept),
        megapixels_per_round=output_pixels / 1e6,
        extra=extra,
    )
    if mode == "memory":
        workload.cache_method = "n/a: bytes preloaded in memory"
    else:
        _set_cache_control(workload, [ctx.path(entry) for entry, _, _ in kept], case)
    return workload


def _set_cache_control(workload: Workload, paths: list, case: Case) -> None:  # type: ignore[type-arg]
    """Warm: read every file before each round. Cold: evict before each round, and check."""
    import pytest

    from imgbench.harness.cache import evict_and_check, resident_fraction, warm

    if case.params["cache_state"] == "warm":
        warm(paths)
        workload.before_round = lambda: warm(paths)
        workload.cache_method = (
            "every file read before each round; mincore residency after warming "
            f"{resident_fraction(paths):.0%}"
        )
        return
    trial = evict_and_check(paths)
    if not trial.ok:
        pytest.skip(f"cold cache impossible here: {trial.method}")
    worst = [trial.resident_after]

    def evict_round() -> None:
        result = evict_and_check(paths)
        if not result.ok:
            raise RuntimeError(f"cold cache lost mid-run: {result.method}")
        worst.append(result.resident_after)

    workload.before_round = evict_round
    workload.cache_method = trial.method
    workload.extra["max_resident_after_evict"] = worst  # filled in as rounds run
