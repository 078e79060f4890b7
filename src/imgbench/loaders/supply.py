"""Decoders inside the loader ("loader supply"): every full-size JPEG decoder of the readers
registry as a loader pipeline, so a decoder is ranked where it runs as well as on one thread.

Why: a decoder's single-thread rank (the reader stage) is not its rank inside a DataLoader (the
2026 imread_benchmark paper, arXiv 2605.08731, saw rankings flip between the two). Each decoder
runs the default pipeline with only the decoder changed (the dataset's files -> the decoder ->
``albumentations/numpy`` train-classification -> collate) through the reference loader (the
DataLoader) at ``LoaderPlan.supply_worker_counts()``. The cases come from the registry, so a
reader added there joins the supply with no edit here. Left out, each with its reason
(:func:`left_out`): readers that do not decode JPEG, reduced or resized outputs, readers of
another environment than the loader's unless it is layered over the main env (pillow-simd: its
cases run in that env's session), GPU decoders (a forked worker cannot use CUDA) and
batched calls (one sample at a time they are their library's unbatched decode).

Before any timing, a supply case verifies its decoder on the pool's images against the reference
decode (``imgbench.readers.verify``), in a forked child so the loader's process has never run the
decoder when its workers fork (pyvips deadlocked a DataLoader worker after a decode in the
parent: 60 s batch timeout, a failed row); a decoder that gets one wrong, cannot be built here,
crashes or hangs is a skipped row with the reason: it is no candidate, and its reader rows say
what is wrong.
"""

from __future__ import annotations

import dataclasses
import functools
import multiprocessing
from collections.abc import Callable, Sequence
from typing import Any

from imgbench.errors import one_line
from imgbench.library import Selection, select
from imgbench.loaders.cases import loader_case, prepare_loader, variant_name
from imgbench.loaders.pipeline import PipelineConfig
from imgbench.loaders.plan import LoaderPlan
from imgbench.loaders.registry import get_loader
from imgbench.measure.case import Case, Workload
from imgbench.measure.context import CaseContext
from imgbench.measure.errors import Skip
from imgbench.readers.base import ReaderSpec
from imgbench.readers.registry import build_reader, find_spec, readers
from imgbench.readers.verify import ReferenceCache, verify_item

CODEC = "jpeg"
VERIFY_IMAGES = 32  # the pool's images checked before timing, at most (evenly spread)
VERIFY_TIMEOUT_S = 120.0  # a decoder that hangs on the pool is a reason, not a dead case
REFERENCES_KEY = "reader-references"  # the reader cases' shared reference decodes


def left_out_reason(spec: ReaderSpec, environment: str = "main") -> str | None:
    """Why ``spec`` is no supply decoder of a loader in ``environment``, or None."""
    if CODEC not in spec.codecs:
        return "does not decode JPEG"
    if spec.output != "full":
        return f"{spec.output} output, not the full image"
    if spec.environment != environment and not _hosts_the_loader(spec.environment, environment):
        return f"runs in the {spec.environment} environment, the loader in {environment}"
    if "cuda" in spec.variant.split("-"):
        return "decodes on the GPU: a forked DataLoader worker cannot use CUDA"
    if spec.batched:
        return "a batched call: one sample at a time it is its library's unbatched decode"
    return None


def _hosts_the_loader(decoder_env: str, loader_env: str) -> bool:
    """A main-env loader runs in a layered env (pillow-simd: the main env's torch and
    albumentations behind its own Pillow): the case goes there (``cases.pipeline_environment``)."""
    from imgbench.envs import ENVIRONMENTS

    layered = ENVIRONMENTS.get(decoder_env)
    return loader_env == "main" and layered is not None and layered.layered


def supply_decoders(
    selection: Selection | Sequence[str], environment: str = "main"
) -> tuple[ReaderSpec, ...]:
    """The registry's supply decoders for a loader in ``environment`` that ``selection`` picks
    ("all", or names as a plan's ``libraries``; () none), in registry order."""
    if not selection:
        return ()
    chosen = select(readers(), "all" if selection == "all" else tuple(selection))
    return tuple(s for s in chosen if left_out_reason(s, environment) is None)


def left_out(environment: str = "main") -> list[tuple[str, str]]:
    """(decoder, reason) for every registry reader the supply leaves out."""
    return [
        (spec.key, reason)
        for spec in readers()
        if (reason := left_out_reason(spec, environment)) is not None
    ]


def supply_cases(library: str, plan: LoaderPlan, existing: Sequence[Case] = ()) -> list[Case]:
    """``library`` (the reference loader) with each supply decoder at each supply worker count.
    A case the list already holds (the default pipeline's own decoder in the worker sweep, the
    ``pillow`` extra pipeline) is not added again: its row serves both."""
    spec = get_loader(library)
    seen = {_identity(c) for c in existing}
    cases = []
    for decoder in supply_decoders(plan.supply_decoders, spec.environment):
        config = PipelineConfig(decoder=decoder.key)
        for workers in plan.supply_worker_counts():
            case = loader_case(library, workers, plan=plan, config=config, prepare=prepare_supply)
            if _identity(case) in seen:
                continue
            seen.add(_identity(case))
            cases.append(dataclasses.replace(case, variant=supply_variant(config, case.params)))
    return cases


def supply_variant(config: PipelineConfig, params: dict[str, Any] | Any) -> str:
    """The loader variant, naming the decoder's variant too where its library has several
    supply decoders (opencv's two, torchvision's two), so their curves never mix."""
    name = variant_name(config, dict(params))
    library, variant = config.decoder.split("/", 1)
    siblings = [s for s in readers() if s.library == library and left_out_reason(s) is None]
    if len(siblings) > 1:
        prefix = f"{config.format}-{library}"
        name = name.replace(f"{prefix}-", f"{prefix}.{variant}-", 1)
    return name


def _identity(case: Case) -> tuple[str, str]:
    return case.library, repr(sorted(case.params.items()))


def _references(ctx: CaseContext) -> ReferenceCache:
    """The session's reference decodes, shared with the reader cases (and kept on disk)."""
    return ctx.shared(
        REFERENCES_KEY, lambda: ReferenceCache(folder=ctx.scratch_dir() / "references")
    )


def verified_entries(ctx: CaseContext, spec: ReaderSpec) -> list[Any]:
    """The pool's images a supply case checks: up to :data:`VERIFY_IMAGES`, evenly spread."""
    entries = [e for e in ctx.entries() if e.codec in spec.codecs]  # the pipeline's pool
    step = max(1, len(entries) // VERIFY_IMAGES)
    return entries[::step][:VERIFY_IMAGES]


def verification_problem(ctx: CaseContext, spec: ReaderSpec) -> str | None:
    """Why ``spec`` must not supply the loader: it cannot be built here, or it decodes one of
    the pool's images (up to :data:`VERIFY_IMAGES`, evenly spread) unlike the reference."""
    try:
        reader = build_reader(spec)
    except Exception as exc:
        return f"cannot be built here: {one_line(exc)}"
    references = _references(ctx)
    for entry in verified_entries(ctx, spec):
        data = ctx.path(entry).read_bytes()
        verdict = verify_item(
            reader.decode,
            data,
            path=entry.path,
            data=data,
            key=entry.sha256,
            codec=entry.codec,
            references=references,
        )
        if not verdict.ok:
            return f"failed verification against the reference decode on {entry.path}: " + (
                verdict.detail
            )
    return None


def in_child(check: Callable[[], str | None], timeout_s: float = VERIFY_TIMEOUT_S) -> str | None:
    """``check()`` in a forked child process: the loader's process never runs the decoder before
    its workers fork (libvips's threads, started by a first decode, deadlock a forked worker), and
    a decoder that crashes or hangs is a reason, not a dead case."""
    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)

    def run() -> None:
        try:
            send.send(("done", check()))
        except BaseException as exc:  # anything the check raised travels as its reason
            send.send(("error", one_line(exc)))

    child = context.Process(target=run, name="imgbench-verify-decoder", daemon=True)
    child.start()
    send.close()
    try:
        if not receive.poll(timeout_s):
            return f"verification did not finish in {timeout_s:.0f} s"
        kind, value = receive.recv()
    except EOFError:
        child.join(5)
        return f"the decoder killed the verifying process (exit code {child.exitcode})"
    finally:
        if child.is_alive():
            child.kill()
        child.join(5)
        receive.close()
    return f"verification raised {value}" if kind == "error" else value


def prepare_supply(ctx: CaseContext, case: Case) -> Workload:
    """Verify the decoder on the pool (in a child process), then build the loader as every
    loader case does."""
    decoder = str(case.params["decoder"])
    spec = find_spec(*decoder.split("/", 1))
    _references(ctx)  # made here, so the child's reference decodes land in this session's folder
    problem = in_child(functools.partial(verification_problem, ctx, spec))
    if problem is not None:
        raise Skip(f"{decoder} left out of the loader supply: {problem}")
    workload = prepare_loader(ctx, case)
    checked = len(verified_entries(ctx, spec))
    workload.extra["decoder_verified_images"] = checked
    return workload
