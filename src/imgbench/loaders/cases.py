"""Loader cases: loader x workers x pipeline, the knobs of the DataLoader, AU, and memory.

One timed item is one batch pulled from the loader (``images_per_item = batch_size``); a round is
``batches_per_round`` batches (at least two per worker); before the harness's warm-up rounds,
the batches the workers prefetched while starting are drained untimed, so no timed round
empties a full queue at memory speed. Every
process computes on one thread (``threads=1``): parallelism comes from the loader's workers, and
0 workers is the single-core baseline the speed-up is measured against.

What runs comes from the profile's :class:`LoaderPlan` and each loader's registry entry: the
reference loader (``sweep="workers"``, the DataLoader) runs the worker sweep, its knobs, the
extra pipelines and AU; thread-pool loaders run the thread sweep over their entry's pipelines;
every other registered loader runs the rows its entry declares, so a new loader needs no edit
here.

S3 pipelines (``LoaderPlan.s3_pipelines``, ``PipelineConfig.storage == "s3"``): the reference
loader's sweep over ``s3_worker_counts()`` at the first emulated accelerator speed, once per
network shape. Their store is the format's local build uploaded to the session's bucket
(``imgbench.formats.s3_cases.uploaded_store``, round-tripped before any timing); each sample is
one GET through the format's S3 reader, opened once per worker process. They declare the ``s3``
session service (``s3@<shape>`` when shaped) and add ``storage=s3`` (and a shape's parameters)
to their parameters; local cases keep the ids they had, with ``storage=local`` as a row column.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypedDict

from imgbench.library import select
from imgbench.loaders.cold import cold_cache
from imgbench.loaders.documented import (
    AS_DOCUMENTED,
    Documented,
    configuration_columns,
    documented_params,
)
from imgbench.loaders.documented import PARAM as DOCUMENTED_PARAM
from imgbench.loaders.pipeline import (
    CLASSIFICATION,
    CROP_OCR,
    FILES,
    FULL_DECODE,
    LOCAL,
    NO_AUGMENT,
    NO_PRELOAD,
    S3,
    SEGMENTATION,
    PipelineConfig,
)
from imgbench.loaders.plan import LoaderPlan
from imgbench.loaders.registry import LoaderSpec, get_loader, loaders, pipeline_config
from imgbench.measure.case import Case, Workload, spec_case
from imgbench.measure.context import CaseContext
from imgbench.measure.errors import CaseFailed, Skip
from imgbench.profiles import Profile
from imgbench.stages import load_attr

if TYPE_CHECKING:
    from imgbench.loaders.pipeline import S3FormatSource
    from imgbench.objectstore.session import S3Access

DEFAULT_NAME = "default"
DEFAULT_PIPELINE = pipeline_config(DEFAULT_NAME)
# the decoder supply's cases (imgbench.loaders.supply imports this module: named, not imported)
SUPPLY_CASES = "imgbench.loaders.supply:supply_cases"
OUTPUT_SIDE = 224  # the augment stage's train recipe ends in 3 x 224 x 224
LOCAL_CACHE_METHOD = "warm: the pool of images is re-read every epoch and stays in the page cache"
S3_CACHE_METHOD = (
    "n/a: every sample one GET from the S3 server over storage_endpoint (the client caches "
    "nothing); the server's files as it keeps them, in its page cache"
)


def loader_cases(profile: Profile) -> list[Case]:
    """Sweeps first, then knobs and extra pipelines, every other loader, AU, experiments."""
    plan = profile.plan(LoaderPlan)
    specs = select(loaders(), plan.libraries)
    reference = [s for s in specs if s.sweep == "workers"]
    cases = [
        loader_case(spec.library, w, plan=plan, config=pipeline_config(name))
        for spec in reference
        for name in plan.sweep_pipelines
        for w in plan.workers()
    ]
    if plan.baseline_pipeline and plan.baseline_pipeline not in plan.sweep_pipelines:
        baseline = pipeline_config(plan.baseline_pipeline)
        cases += [
            loader_case(spec.library, w, plan=plan, config=baseline)
            for spec in reference
            for w in plan.baseline_workers()
        ]
    cases += [
        loader_case(s.library, t, plan=plan, config=pipeline_config(name))
        for s in specs
        if s.sweep == "threads"
        for name in s.pipelines
        for t in plan.thread_sweep
    ]
    cases += [c for spec in reference for c in _knob_cases(spec.library, plan)]
    cases += ceiling_and_rank_cases(specs, plan)
    cases += [c for spec in reference for c in task_cases(spec.library, plan)]
    if plan.supply_decoders:  # every full-size JPEG decoder inside the loader
        supply: Callable[..., list[Case]] = load_attr(SUPPLY_CASES)
        cases += [c for spec in reference for c in supply(spec.library, plan, cases)]
    for spec in specs:
        if spec.sweep is None and spec.experiment is None:
            cases += [
                loader_case(spec.library, w, plan=plan, config=pipeline_config(name), method=m)
                for name, m, w in own_rows(spec, plan)
            ]
    for spec in reference:
        dl = _partial(spec.library, plan)
        for speed in plan.au_accelerators:
            cases += [dl(0, accelerator=speed), dl(2, accelerator=speed)]
    cases += [c for spec in specs if spec.sweep != "workers" for c in au_cases(spec, plan)]
    for spec in reference:
        cases += s3_loader_cases(spec.library, plan)
    return cases + _entries_cases(specs, plan)


def _entries_cases(specs: tuple[LoaderSpec, ...], plan: LoaderPlan) -> list[Case]:
    """The rows entries plan in their own modules: each system as its authors build it
    (``as_documented``, imgbench.loaders.documented), then the experiments."""
    planners = [s.as_documented for s in specs if plan.as_documented and s.as_documented]
    planners += [s.experiment for s in specs if s.experiment is not None]
    cases: list[Case] = []
    for name in planners:
        planner: Callable[[LoaderPlan], list[Case]] = load_attr(name)
        cases += planner(plan)
    return cases


def _knob_cases(library: str, plan: LoaderPlan) -> list[Case]:
    """The reference loader's start methods, knobs, out-of-order delivery and extra pipelines."""
    dl = _partial(library, plan)
    cases = [dl(2, start_method=m) for m in plan.start_methods if m != "fork"]
    if plan.knobs:
        cases += [
            dl(2, persistent_workers=False),
            dl(2, prefetch_factor=4),
            dl(2, pin_memory=True),
        ]
    cases += [dl(w, in_order=False) for w in plan.in_order_workers]
    for name in plan.extra_pipelines:
        config = pipeline_config(name)
        cases += [dl(0, config=config), dl(2, config=config)]
    cores = os.cpu_count() or 2
    cases += [dl(cores, config=pipeline_config(name)) for name in plan.crop_pipelines]
    return cases


def ceiling_and_rank_cases(specs: tuple[LoaderSpec, ...], plan: LoaderPlan) -> list[Case]:
    """The in-RAM ceilings (the pool's bytes, then its decoded pixels, in RAM before the first
    batch) at one worker or thread per core, through the reference loader and every thread
    sweep that runs the default pipeline; then, through the reference loader, ``R`` training
    ranks' loaders sharing the cores for each ``R`` of ``plan.ranks``: each rank with the cores
    divided among the ranks, and with one worker per core each (what a script tuned on one GPU
    does on R)."""
    cores = os.cpu_count() or 2
    reference = [s for s in specs if s.sweep == "workers"]
    threads = [s for s in specs if s.sweep == "threads" and DEFAULT_NAME in s.pipelines]
    cases = [
        loader_case(spec.library, cores, plan=plan, config=pipeline_config(name))
        for spec in (*reference, *threads)
        for name in plan.ceiling_pipelines
    ]
    for spec in reference:
        for ranks in plan.ranks:
            for workers in dict.fromkeys((max(1, cores // ranks), cores)):
                cases.append(loader_case(spec.library, workers, plan=plan, ranks=ranks))
    return cases


def task_cases(library: str, plan: LoaderPlan) -> list[Case]:
    """``library`` over the plan's task pipelines (segmentation, crop-ocr): the task sweep, then
    the pipelines run at one worker per core only."""
    cores = os.cpu_count() or 2
    sweep = [(name, w) for name in plan.task_pipelines for w in plan.task_worker_counts()]
    sweep += [(name, cores) for name in plan.task_pipelines_at_cores]
    return [
        loader_case(library, w, plan=plan, config=pipeline_config(name))
        for name, w in dict.fromkeys(sweep)
    ]


def own_rows(spec: LoaderSpec, plan: LoaderPlan) -> list[tuple[str, str | None, int]]:
    """(pipeline, method, workers) of a loader's steady rows, the reference loader's aside: the
    thread sweep ("threads"), each method over its sweep, or its entry's ``workers``."""
    if spec.experiment is not None or spec.sweep == "workers":
        return []
    if spec.pipelines != runs_tasks(spec.pipelines, plan):
        return own_rows(replace(spec, pipelines=runs_tasks(spec.pipelines, plan)), plan)
    tasks = tuple(n for n in spec.pipelines if pipeline_config(n).task != CLASSIFICATION)
    if tasks and spec.task_methods:  # 0 workers, then each method at each other count
        rest = tuple(n for n in spec.pipelines if n not in tasks)
        rows = own_rows(replace(spec, pipelines=rest, task_methods=()), plan)
        for name in tasks:
            counts = task_counts(pipeline_config(name).task, plan)
            rows += [(name, None, 0)] if 0 in counts else []
            rows += [(name, m, w) for w in counts if w for m in spec.task_methods]
        # Keras runs one thread without multiprocessing inline: the 0-worker row's work
        return [r for r in rows if not (r[1] == "threads" and r[2] == 1)]
    if spec.sweep == "threads":
        return [(name, None, t) for name in spec.pipelines for t in plan.thread_sweep]
    if spec.methods:
        sweeps = {"workers": plan.workers(), "threads": plan.thread_sweep}
        return [
            (name, method, w)
            for name in spec.pipelines
            for method, sweep in spec.methods
            for w in sweeps[sweep]
        ]
    return [(name, None, w) for name in spec.pipelines for w in spec.workers]


def runs_tasks(names: tuple[str, ...], plan: LoaderPlan) -> tuple[str, ...]:
    """A loader's pipelines less those of a task the plan does not run (its task pipelines,
    ``task_pipelines`` and ``task_pipelines_at_cores``, name the tasks it runs)."""
    named = (*plan.task_pipelines, *plan.task_pipelines_at_cores)
    tasks = {CLASSIFICATION, *(pipeline_config(n).task for n in named)}
    return tuple(n for n in names if pipeline_config(n).task in tasks)


def task_counts(task: str, plan: LoaderPlan) -> tuple[int, ...]:
    """The worker counts a loader's own ``task`` rows run at, as the reference loader's: the
    task sweep where ``task_pipelines`` names the task, else one worker per core."""
    if any(pipeline_config(n).task == task for n in plan.task_pipelines):
        return plan.task_worker_counts()
    return (os.cpu_count() or 2,)


def au_cases(spec: LoaderSpec, plan: LoaderPlan) -> list[Case]:
    """A loader's AU rows, generic for every loader but the reference one (whose AU rows are its
    0 and 2 workers at every speed): one per method, on its first pipeline, at the first
    emulated accelerator speed, at ``plan.au_workers`` workers or threads where it runs that
    many, else at the most it runs."""
    if not plan.au_accelerators:
        return []
    by_method: dict[str | None, tuple[str, list[int]]] = {}
    for name, method, w in own_rows(spec, plan):
        if pipeline_config(name).task != CLASSIFICATION:
            continue  # AU rows are classification's
        by_method.setdefault(method, (name, []))[1].append(w)
    return [
        loader_case(
            spec.library,
            plan.au_workers if plan.au_workers in counts else max(counts),
            plan=plan,
            config=pipeline_config(name),
            method=method,
            accelerator=plan.au_accelerators[0],
        )
        for method, (name, counts) in by_method.items()
    ]


def s3_loader_cases(library: str, plan: LoaderPlan) -> list[Case]:
    """``library`` over the plan's S3 pipelines: each S3 worker count, at the first emulated
    accelerator speed (AU says whether the workers hide the network), once per network shape."""
    accelerator = plan.au_accelerators[0] if plan.au_accelerators else None
    cases = []
    for name in plan.s3_pipelines:
        config = pipeline_config(name)
        if config.storage != S3:
            raise ValueError(f"s3_pipelines: {name!r} reads local storage, not S3")
        cases += [
            loader_case(
                library, w, plan=plan, config=config, accelerator=accelerator, network_shape=shape
            )
            for shape in dict.fromkeys(plan.s3_network_shapes)
            for w in plan.s3_worker_counts()
        ]
    return cases


def _partial(library: str, plan: LoaderPlan) -> Callable[..., Case]:
    def case(workers: int, **knobs: Any) -> Case:
        return loader_case(library, workers, plan=plan, **knobs)

    return case


def loader_case(
    library: str,
    workers: int,
    *,
    plan: LoaderPlan,
    config: PipelineConfig = DEFAULT_PIPELINE,
    start_method: str | None = None,
    persistent_workers: bool | None = None,
    prefetch_factor: int | None = None,
    pin_memory: bool | None = None,
    in_order: bool | None = None,
    method: str | None = None,
    accelerator: int | None = None,
    compute_kind: str = "sleep",
    prepare: Callable[[CaseContext, Case], Workload] | None = None,
    batch_size: int | None = None,
    batch_timeout_s: float | None = None,
    network_shape: str | None = None,
    documented: Documented | None = None,
    ranks: int = 1,
) -> Case:
    """One loader case. An S3 pipeline (``config.storage == "s3"``) adds ``storage=s3`` to the
    parameters and needs the session's ``s3`` service; ``network_shape`` (a shape name, default
    the server's own address) puts a shaped path in between: its parameters and ``s3@<shape>``.
    ``documented``: the system built as its authors' example builds it (an as-documented row:
    its parameters and source; imgbench.loaders.documented)."""
    spec = get_loader(library)
    processes = spec.torch_workers and workers > 0
    params: dict[str, Any] = {
        "workers": workers,
        "batch_size": batch_size or plan.batch_size,
        "batches_per_round": batches_per_round(plan, workers, spec),
        "threads": 1,
        "format": config.format,
        "decoder": config.decoder,
        "pipeline": config.augment
        if config.augment == NO_AUGMENT
        else f"{config.augment}:{config.recipe}",
        "prefetch_factor": prefetch_factor or (2 if workers > 0 or not spec.processes else None),
    }
    if processes:
        params["start_method"] = start_method or "fork"
        params["persistent_workers"] = True if persistent_workers is None else persistent_workers
        params["pin_memory"] = bool(pin_memory)
        if in_order is not None:  # the DataLoader's in_order (torch >= 2.6)
            params["in_order"] = in_order
    params |= _pipeline_params(config, ranks)
    if method is not None:  # where a loader of several methods runs its work
        params["method"] = method
    if accelerator is not None:
        params["accelerator_images_per_s"] = accelerator
        params["compute_kind"] = compute_kind
    if batch_timeout_s is not None:
        params["batch_timeout_s"] = batch_timeout_s
    if documented is not None:
        params.update(documented_params(documented))
    services, columns = _storage(config, params, network_shape)
    columns.update(
        configuration_columns(spec.system_name, crops=crops(config), documented=documented)
    )
    if crops(config) and config.crop_decode != FULL_DECODE:
        columns["crop_decode"] = config.crop_decode
    environment, part_checks = pipeline_environment(spec, config)
    case = spec_case(
        spec,
        stage="loader",
        variant=variant_name(config, params),
        prepare=prepare or prepare_loader,
        params=params,
        requires=_requires(spec, config),
        check=_check(params, part_checks),
        services=services,
        columns={**columns, "task": config.task},
    )
    return case if environment == case.environment else replace(case, environment=environment)


def _pipeline_params(config: PipelineConfig, ranks: int) -> dict[str, Any]:
    """The case-id parameters of what is not the plain classification pipeline on one rank;
    classification ids stay as they were."""
    params: dict[str, Any] = {}
    if config.task != CLASSIFICATION:
        params["task"] = config.task
    if config.crop_decode != FULL_DECODE:  # a crop-aware decode (loaders/crop_decode.py)
        params["crop_decode"] = config.crop_decode
    if config.preload != NO_PRELOAD:  # an in-RAM ceiling (loaders/in_ram.py)
        params["preload"] = config.preload
    if ranks > 1:  # training ranks' loaders at once, each with ``workers`` (loaders/ranks.py)
        params["ranks"] = ranks
    return params


def crops(config: PipelineConfig) -> bool:
    """The pipeline's recipe draws a random crop (crop-ocr's crop is fixed; decode-only none)."""
    return config.augment != NO_AUGMENT and config.task != CROP_OCR


def pipeline_environment(
    spec: LoaderSpec, config: PipelineConfig
) -> tuple[str, tuple[Callable[[], str | None], ...]]:
    """Where a main-env loader runs ``config``, and its parts' own checks: a decoder or an
    augmentation that lives in an isolated env (pillow-simd's Pillow, AlbumentationsX) takes the
    case there, so its session measures the DataLoader over that build."""
    if spec.environment != "main":
        return spec.environment, ()
    from imgbench.augment.registry import get_library
    from imgbench.readers.registry import find_spec

    library, variant = config.decoder.split("/", 1)
    parts: list[Any] = [find_spec(library, variant)]
    if config.augment != NO_AUGMENT:
        parts.append(get_library(config.augment))
    isolated = sorted({p.environment for p in parts if p.environment != "main"})
    if len(isolated) > 1:
        raise ValueError(f"{config.label}: its parts live in different envs {isolated}")
    checks = tuple(p.check for p in parts if p.check is not None)
    return (isolated[0] if isolated else "main"), checks


def _storage(
    config: PipelineConfig, params: dict[str, Any], network_shape: str | None
) -> tuple[tuple[str, ...], dict[str, Any]]:
    """(services, row columns) of the case's storage; S3 parameters go into ``params``. Local
    cases keep their parameters (and ids): ``storage`` is only their row column."""
    if config.storage != S3:
        if network_shape is not None:
            raise ValueError(f"{config.label}: a network shape is for S3 pipelines only")
        return (), {"storage": config.storage}
    from imgbench.objectstore.session import service_name
    from imgbench.objectstore.shaping import UNSHAPED, shape_named

    shape = shape_named(network_shape) if network_shape else UNSHAPED
    params["storage"] = S3
    if not shape.unshaped:
        params |= shape.params()
    # the shape is in a skipped row too (no path was set up to fill the columns)
    shaping = "none" if shape.unshaped else shape.name
    return (service_name(shape),), {"storage": S3, "network_shaping": shaping}


def batches_per_round(plan: LoaderPlan, workers: int, spec: LoaderSpec) -> int:
    """At least two batches per worker: N workers deliver their batches in bursts of about N, so
    a shorter round times a burst (near zero) or a gap, and its median says nothing."""
    return max(plan.batches_per_round, spec.round_batches_per_worker * workers)


def variant_name(config: PipelineConfig, params: dict[str, Any]) -> str:
    """The pipeline, plus every knob that is not the default, so curves never mix them."""
    augment = config.augment.split("/")[0]
    if config.augment != NO_AUGMENT and config.recipe != DEFAULT_PIPELINE.recipe:
        augment += "-" + config.recipe.removeprefix("train-")
    parts = [f"{config.format}-{config.decoder.split('/')[0]}-{augment}"]
    if config.crop_decode != FULL_DECODE:  # its own curve: the decoder decodes the crop only
        parts.append(f"{config.crop_decode}-decode")
    if config.preload != NO_PRELOAD:  # its own curve: the pool in RAM before the first batch
        parts.append(f"{config.preload}-in-ram")
    if config.storage != LOCAL:  # its own curve: the same pipeline from the bucket
        shaping = params.get("network_shaping")
        parts.append(f"{config.storage}-{shaping}" if shaping else config.storage)
    return "+".join(parts + _knob_parts(params))


def _knob_parts(params: dict[str, Any]) -> list[str]:
    parts = []
    if params.get("start_method") not in (None, "fork"):
        parts.append(params["start_method"])
    if params.get("persistent_workers") is False:
        parts.append("not-persistent")
    if params.get("prefetch_factor") not in (None, 2):
        parts.append(f"prefetch{params['prefetch_factor']}")
    if params.get("pin_memory"):
        parts.append("pin-memory")
    if params.get("in_order") is False:
        parts.append("out-of-order")
    if "method" in params:
        parts.append(params["method"])
    if params.get("ranks", 1) > 1:
        parts.append(f"{params['ranks']}-ranks")
    if params.get(DOCUMENTED_PARAM) == AS_DOCUMENTED:
        parts.append(AS_DOCUMENTED)
    if "accelerator_images_per_s" in params:
        parts.append(f"au-{params['compute_kind']}-{params['accelerator_images_per_s']}ips")
    return parts


def _requires(spec: LoaderSpec, config: PipelineConfig) -> tuple[str, ...]:
    needed = list(spec.requires)
    if spec.environment != "main":
        return tuple(needed)
    from imgbench.augment.registry import get_library
    from imgbench.readers.registry import find_spec

    library, variant = config.decoder.split("/", 1)
    needed += find_spec(library, variant).requires
    if config.augment != NO_AUGMENT:
        needed += get_library(config.augment).requires
    if config.format != FILES and config.format not in spec.own_formats:
        from imgbench.formats.registry import get_format, get_s3_format

        needed += get_format(config.format).requires
        if config.storage == S3:  # a missing boto3 or webdataset: a skipped row naming it
            needed += get_s3_format(config.format).requires
    return tuple(dict.fromkeys(needed))


def _check(
    params: dict[str, Any], part_checks: tuple[Callable[[], str | None], ...] = ()
) -> Callable[[], str | None]:
    def check() -> str | None:
        if params.get("pin_memory"):
            import torch

            if not torch.cuda.is_available():
                return "pin_memory: recorded, skipped: no CUDA device on this machine"
        return next((reason for c in part_checks if (reason := c()) is not None), None)

    return check


# -- prepare ------------------------------------------------------------------------------------
def make_source(
    ctx: CaseContext,
    config: PipelineConfig,
    own_formats: tuple[str, ...] = (),
    access: S3Access | None = None,
) -> Any:
    """The pipeline's samples: the dataset's files, or a built imgbench format (or the files,
    for a loader that builds ``config.format`` itself), or, for S3 storage, that build uploaded
    to the session's bucket, read through ``access`` (:func:`s3_source`)."""
    from imgbench.loaders.pipeline import FileSource, FormatSource

    if config.task == SEGMENTATION:
        return pair_source(ctx)
    entries = _entries_for(ctx, config)
    if config.task == CROP_OCR:
        return heads_source(ctx, entries)
    if config.storage == S3:
        if access is None:
            raise ValueError(f"{config.label}: an S3 pipeline needs the case's S3 access")
        return s3_source(ctx, config, access)[0]
    if config.format == FILES or config.format in own_formats:
        classes = sorted({e.label for e in entries if e.label is not None})
        index = {name: i for i, name in enumerate(classes)}
        labels = [index[e.label] if e.label is not None else -1 for e in entries]
        return FileSource([str(ctx.path(e)) for e in entries], labels)
    from imgbench.formats.registry import get_format
    from imgbench.formats.session import built_format

    report = built_format(ctx, get_format(config.format))
    return FormatSource(config.format, report.path, report.meta.count)


# pairs drawn for a dataset without masks: 500x375 PNG images + palette PNG masks, seed 003's
# PNG + PNG (every loader reads the same files: tf.data's row from files decodes PNG)
SYNTH_PAIRS = 64
SYNTH_PAIRS_CODEC = "png"


def pair_source(ctx: CaseContext) -> Any:
    """The dataset's own image + mask pairs when its folder has a pair layout
    (``imgbench.datasets.pairs``), else synthetic pairs written once per session into its
    scratch folder (``imgbench.datasets.pairs_synth``): files on disk either way, read and
    decoded in the loader's workers."""
    from imgbench.datasets import pairs
    from imgbench.loaders.pipeline import PairSource

    root = getattr(ctx.dataset, "root", None)
    layout = pairs.detect(root) if root is not None else None
    if root is None or layout is None:

        def synth() -> Any:
            from imgbench.datasets.pairs_synth import generate_pairs

            out = ctx.scratch_dir() / "loader-segmentation-pairs"
            if not (out / ".complete").exists():  # another case of the session wrote them
                n = min(ctx.max_images, SYNTH_PAIRS)
                generate_pairs(out, n, codec=SYNTH_PAIRS_CODEC)
                (out / ".complete").touch()
            return out

        root = ctx.shared("loader-segmentation-pairs", synth)
        layout = pairs.detect(root)
        assert layout is not None
    chosen = layout.pairs[: ctx.max_images]
    return PairSource([str(root / i) for i, _ in chosen], [str(root / m) for _, m in chosen])


def heads_source(ctx: CaseContext, entries: list[Any]) -> Any:
    """The dataset's files with four label heads each, drawn once (seed 0): crop-ocr's labels."""
    import numpy as np

    from imgbench.augment.tasks import OCR_CLASSES, OCR_HEADS
    from imgbench.loaders.pipeline import HeadsSource

    heads = np.random.default_rng(0).integers(0, OCR_CLASSES, (len(entries), OCR_HEADS))
    return HeadsSource([str(ctx.path(e)) for e in entries], heads, OCR_CLASSES)


def s3_source(
    ctx: CaseContext, config: PipelineConfig, access: S3Access
) -> tuple[S3FormatSource, dict[str, Any]]:
    """The session's upload of ``config.format``'s local build (made once, by the format stage
    or the first case to need it; round-tripped against the source files before any timing: a
    bad upload is a failed row), as a source read through ``access``'s path, and what the row
    records about it."""

    from imgbench.formats.base import read_keys
    from imgbench.formats.registry import get_format, get_s3_format
    from imgbench.formats.s3_cases import uploaded_store, verified_upload
    from imgbench.formats.session import built_format
    from imgbench.loaders.pipeline import S3FormatSource

    spec = get_s3_format(config.format)
    upload = uploaded_store(ctx, spec, access.server_endpoint)  # untimed set-up: the server
    verdict = verified_upload(ctx, spec, access.server_endpoint, upload)
    if not verdict.ok:
        raise CaseFailed(verdict.reason())
    local = built_format(ctx, get_format(spec.name))
    labels = [label for _, label in read_keys(local.path)]
    source = S3FormatSource(spec.name, access.endpoint, upload.prefix, upload.meta, labels)
    extra = {
        "s3_client": spec.client,
        "s3_prefix": upload.prefix,
        "stored_bytes": upload.stored_bytes,
        "stored_objects": upload.objects,
        "upload_s": round(upload.seconds, 6),
        "verified_records": verdict.records,
        **access.extra(),
    }
    return source, extra


def _entries_for(ctx: CaseContext, config: PipelineConfig) -> list[Any]:

    from imgbench.readers.registry import find_spec

    library, variant = config.decoder.split("/", 1)
    codecs = find_spec(library, variant).codecs
    entries = [e for e in ctx.entries() if e.codec in codecs]
    if not entries:
        raise Skip(f"dataset {ctx.dataset.name} has no images {config.decoder} decodes")
    return entries


def prepare_loader(
    ctx: CaseContext, case: Case, wrap: Callable[[Any], Any] | None = None
) -> Workload:
    """Build the pipeline and the loader, start it, and hand the harness one batch per item.

    The first batch is checked before any timing (``imgbench.loaders.checks``): a loader that
    delivers wrong batches fast is a failed row, not a figure. ``wrap`` replaces the source
    (tests use it to inject faults); the labels the batches may carry are the unwrapped source's.
    """

    from imgbench.loaders.au import ComputeStep
    from imgbench.loaders.checks import check_batch, expectation, known_labels
    from imgbench.loaders.pipeline import SamplePipeline, handoff
    from imgbench.loaders.run import LoaderRun

    params = dict(case.params)
    augment, _, recipe = params["pipeline"].partition(":")
    config = PipelineConfig(
        format=params["format"],
        decoder=params["decoder"],
        augment=augment,
        recipe=recipe or DEFAULT_PIPELINE.recipe,
        storage=S3 if params.get("storage") == S3 else LOCAL,
        task=params.get("task", CLASSIFICATION),
        crop_decode=params.get("crop_decode", FULL_DECODE),
        preload=params.get("preload", NO_PRELOAD),
    )
    spec = get_loader(case.library)
    storage_extra: dict[str, Any] = {}
    if config.storage == S3:
        from imgbench.formats.s3_cases import case_access

        _entries_for(ctx, config)  # no image the decoder reads: skipped, before any upload
        source, storage_extra = s3_source(ctx, config, case_access(ctx, case))
    else:
        source = make_source(ctx, config, spec.own_formats)
    if config.preload != NO_PRELOAD:  # untimed: the pool into RAM before any worker starts
        source = _in_ram(source, config, storage_extra)
    # on an emulated disk the rounds read cold (imgbench.loaders.cold); warm elsewhere
    cache = None
    if config.storage != S3 and config.preload == NO_PRELOAD:
        own = config.format != FILES and config.format in spec.own_formats
        cache = cold_cache(ctx, source, own)
    labels = known_labels(source)
    if wrap is not None:
        source = wrap(source)
    pipeline = SamplePipeline(source, config)
    batch_size, n_batches = int(params["batch_size"]), int(params["batches_per_round"])
    expect = expectation(config, batch_size, labels)
    if len(pipeline) < batch_size:
        raise Skip(f"{len(pipeline)} images, fewer than one batch of {batch_size}")
    compute = None
    if params.get("accelerator_images_per_s"):
        compute = ComputeStep.for_accelerator(
            params["accelerator_images_per_s"], batch_size, params.get("compute_kind", "sleep")
        )
    workers, ranks = int(params.get("workers") or 0), int(params.get("ranks") or 1)
    check = functools.partial(check_batch, expect=expect)
    loader, name = _built(spec, case.library, pipeline, params, check)
    run = LoaderRun(
        loader,
        name,
        parallel=max(1, workers) * ranks,
        warmup_batches=ctx.settings.warmup_rounds * n_batches,
        drain_batches=workers * int(params.get("prefetch_factor") or 0),
        compute=compute,
        check=check,
        **_timeouts(params),
    )
    run.extra.update(
        first_batch_expected=expect.describe(),
        pipeline=config.label,
        images_in_pool=len(pipeline),
        loader_note=spec.note or None,
        sampling="endless reshuffled epochs: one iterator for the whole measurement",
        **storage_extra,
    )
    run.start()
    run.extra["pipeline_versions"] = pipeline_versions(config, spec)  # after start: what imported
    # what the decoder hands the augmentation: the array, or its own image ("pil": ImageFolder's way)
    run.extra["sample_handoff"] = handoff(config)
    if config.task != CLASSIFICATION:
        from imgbench.augment.tasks import RECIPES

        run.extra["task_recipe"] = RECIPES[config.task]
        run.extra["task_output"] = TASK_OUTPUT[config.task]
        if config.task == SEGMENTATION:  # which codec "from files" decoded
            run.extra["pair_images"] = image_suffixes(getattr(pipeline.source, "paths", []))
    return Workload(
        items=list(range(n_batches)),
        fn=run.step,
        images_per_item=batch_size * ranks,
        megapixels_per_round=n_batches * batch_size * ranks * output_pixels(config) / 1e6,
        cache_method=cache_method(config),
        cache=cache,
        before_round=cache.before_round if cache is not None else None,
        extra=run.extra,
        close=run.close,
        min_round_s=spec.min_round_s,
        runs_ahead=True,
    )


def _in_ram(source: Any, config: PipelineConfig, extra: dict[str, Any]) -> Any:
    """The source held in RAM as ``config.preload`` says; ``extra`` gets what it took."""
    from imgbench.loaders.in_ram import preloaded

    held = preloaded(source, config.preload, config.decoder)
    extra.update(preload_s=round(held.preload_s, 6), preload_bytes=held.nbytes)
    return held


def _built(
    spec: LoaderSpec,
    library: str,
    pipeline: Any,
    params: dict[str, Any],
    check: Callable[[Any], str | None],
) -> tuple[Any, str]:
    """The case's loader and its name in errors: one, or one per training rank, each in its own
    process over its shard (imgbench.loaders.ranks)."""
    workers, ranks = int(params.get("workers") or 0), int(params.get("ranks") or 1)
    build = spec.load().build
    if ranks == 1:
        return build(pipeline, params), f"{library} ({workers} workers)"
    from imgbench.loaders.ranks import RanksLoader

    loader = RanksLoader(functools.partial(build, pipeline), params, ranks, check)
    return loader, f"{library} ({ranks} ranks x {workers} workers)"


def cache_method(config: PipelineConfig) -> str:
    """How the row's reads met the page cache (the ``cache_method`` column)."""
    if config.preload != NO_PRELOAD:
        held = "decoded pixels" if config.preload == "decoded" else "encoded bytes"
        return (
            f"n/a: the pool's {held} held in memory before the first batch; no read in the rounds"
        )
    return S3_CACHE_METHOD if config.storage == S3 else LOCAL_CACHE_METHOD


TASK_OUTPUT = {
    SEGMENTATION: "(images B x 3 x 224 x 224 float32, masks B x 224 x 224 int64); the recipe's "
    "one-hot mask is computed in the sample but not shipped",
    CROP_OCR: "(images B x 32 x 128 x 3 float32, heads B x 4 x 21000 float32): one-hot per batch "
    "in the collate, as seed 000's Sequence does with to_categorical",
}


def image_suffixes(paths: Any) -> list[str]:
    """The pool's image files by extension (e.g. ``["png"]``)."""
    return sorted({os.fsdecode(p).rpartition(".")[2].lower() for p in paths})


def output_pixels(config: PipelineConfig) -> int:
    """Pixels of one output image: 224 x 224, crop-ocr's 128 x 32, 0 for decode-only."""
    if config.augment == NO_AUGMENT:
        return 0
    if config.task == CROP_OCR:
        from imgbench.augment.tasks import OCR_SIZE

        return OCR_SIZE[0] * OCR_SIZE[1]
    return OUTPUT_SIDE * OUTPUT_SIDE


class _Timeouts(TypedDict, total=False):
    batch_timeout_s: float
    first_batch_timeout_s: float


def _timeouts(params: dict[str, Any]) -> _Timeouts:
    if "batch_timeout_s" not in params:
        return {}
    seconds = float(params["batch_timeout_s"])
    return {"batch_timeout_s": seconds, "first_batch_timeout_s": 3 * seconds}


def pipeline_versions(config: PipelineConfig, spec: LoaderSpec) -> dict[str, str]:
    """Versions of every library the pipeline ran, by distribution: the decoder's, the
    augmentation library's, the format's, the loader's, NumPy's, and torch's once imported."""
    import contextlib
    import platform
    import sys

    from imgbench.augment.registry import get_library
    from imgbench.formats.registry import get_format
    from imgbench.machine import dist_version
    from imgbench.readers.registry import find_spec

    dists: list[str | None] = ["numpy"]
    library, _, variant = config.decoder.partition("/")
    with contextlib.suppress(KeyError):
        dists.append(find_spec(library, variant).dist)
    # not in the augment registry: "tensorflow" is tf.data's own graph, the loader's library
    with contextlib.suppress(KeyError):
        dists.append(get_library(config.augment).dist if config.augment != NO_AUGMENT else None)
    versions: dict[str, str] = {}
    if config.format != FILES and config.format not in spec.own_formats:
        fmt = get_format(config.format)
        dists.append(fmt.dist)
        if config.storage == S3:  # the S3 reader's library, and the client under it
            from imgbench.formats.registry import get_s3_format

            dists += [get_s3_format(config.format).dist, "boto3"]
        own = fmt.version()  # e.g. sqlite: the library's version, not a distribution's
        if own is not None:
            versions[fmt.library] = own
    dists.append(spec.dist)
    if spec.dist is None:  # a loader from the standard library
        versions["python"] = platform.python_version()
    if "torch" in sys.modules:
        dists.append("torch")
    for dist in dists:
        version = dist_version(dist) if dist else None
        if dist and version:
            versions[dist] = version
    return dict(sorted(versions.items()))
