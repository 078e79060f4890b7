"""Augment cases: every library x transform and x pipeline, per image and in batches.

Set-up happens in ``prepare``, outside the timing: the dataset's images are decoded once with
Pillow (shorter side raised to 256 when smaller, so every crop is valid), converted to each
library's input form, and the library's transform objects are built. The op runs once on every
input before timing (contract check and output size), and those outputs are checked on the
case's own images (``outputs.check_outputs``: shape, dtype, range, and the reference library's
output for deterministic ones; a problem fails the case); a transform too slow for the profile's
per-case budget gets fewer images, recorded in the row. Each row carries its agreement result
from verify.py in ``extra_json``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from imgbench.augment import spec
from imgbench.augment import task_cases as tasked
from imgbench.augment.base import make_batch, make_input
from imgbench.augment.outputs import check_outputs
from imgbench.augment.pipelines import PIPELINES
from imgbench.augment.plan import AugmentPlan
from imgbench.augment.registry import AugmentLibrary, get_library, libraries
from imgbench.augment.tasks import OCR_BATCH, supports
from imgbench.library import select
from imgbench.measure.case import Case, Workload, spec_case
from imgbench.measure.context import CaseContext
from imgbench.measure.errors import CaseFailed, Skip
from imgbench.profiles import Profile

FIXED_SIDE = 320  # batch inputs (and their per-image twins) are resized to 320x320


def augment_cases(profile: Profile) -> list[Case]:
    plan = profile.plan(AugmentPlan)
    transforms = (
        tuple(t.name for t in spec.TRANSFORMS) if plan.transforms == "all" else plan.transforms
    )
    pipelines = tuple(p.name for p in PIPELINES) if plan.pipelines == "all" else plan.pipelines
    cases: list[Case] = []
    for lib in select(libraries(), plan.libraries):
        cases.extend(_task_cases(lib, plan))
        default_threads: tuple[int | None, ...] = (1, None) if lib.parallel else (1,)
        for name in transforms:
            if lib.row(name) is None:
                continue
            for threads in default_threads if plan.transform_threads_default else (1,):
                cases.append(_case(lib, {"transform": name, "input": lib.input}, threads))
        pipeline_threads = default_threads if plan.pipeline_threads_default else (1,)
        for name in pipelines:
            if lib.pipeline_names is None or name in lib.pipeline_names:
                cases.extend(_pipeline_cases(lib, plan, name, pipeline_threads))
    return cases


def _pipeline_cases(
    lib: AugmentLibrary, plan: AugmentPlan, name: str, threads_options: tuple[int | None, ...]
) -> list[Case]:
    """A pipeline's per-image cases, then (for a library with a batch input) its per-image
    twins at the fixed size and its batch cases."""
    cases = [
        _case(lib, {"pipeline": name, "input": lib.pipeline_input}, threads)
        for threads in threads_options
    ]
    if lib.batch_input is None or not plan.batch_sizes:
        return cases
    fixed = f"{FIXED_SIDE}x{FIXED_SIDE}"
    for threads in threads_options:
        if threads == 1 or plan.transform_threads_default:  # the per-image twin
            twin = {"pipeline": name, "input": lib.pipeline_input, "input_size": fixed}
            cases.append(_case(lib, twin, threads))
        for batch in plan.batch_sizes:
            params = {
                "pipeline": name,
                "input": lib.batch_input,
                "input_size": fixed,
                "batch_size": batch,
            }
            cases.append(_case(lib, params, threads))
    return cases


def _task_cases(lib: AugmentLibrary, plan: AugmentPlan) -> list[Case]:
    """One case per task the library builds (augment/tasks.py), threads=1; crop-ocr's one-hot
    heads are a case of their own (one item = one batch of labels)."""
    cases = []
    for task in plan.tasks:
        params: dict[str, Any] = {"task": task, "threads": 1}
        if supports(lib.task_key, task):
            inputs = "pairs" if task == "segmentation" else lib.pipeline_input
            cases.append(
                spec_case(
                    lib,
                    stage="augment",
                    prepare=_prepare_task,
                    params={**params, "input": inputs},
                    columns={"task": task},
                )
            )
        if task == "crop-ocr" and supports(lib.task_key, "onehot"):
            onehot = {
                **params,
                "part": "onehot",
                "classes": plan.ocr_classes,
                "batch_size": OCR_BATCH,
            }
            cases.append(
                spec_case(
                    lib,
                    stage="augment",
                    prepare=_prepare_task,
                    params=onehot,
                    columns={"task": task},
                )
            )
    return cases


def _prepare_task(ctx: CaseContext, case: Case) -> Workload:
    return tasked.prepare(ctx, case, decoded_images)


def _case(lib: AugmentLibrary, params: dict[str, Any], threads: int | None) -> Case:
    return spec_case(
        lib,
        stage="augment",
        prepare=prepare,
        params={**params, "threads": threads},
        columns={"task": "classification"},
    )


def decoded_images(ctx: CaseContext, limit: int) -> tuple[list[np.ndarray], int]:
    """The sample of ``limit`` images as HxWx3 uint8 RGB, decoded once per session with Pillow.

    Returns the arrays and how many were upscaled (shorter side below 256 raised to 256).
    """

    sample = ctx.sample(limit=limit)

    def decode() -> tuple[list[np.ndarray], int]:
        from PIL import Image

        arrays, upscaled = [], 0
        for entry in sample.entries:
            with Image.open(ctx.path(entry)) as opened:
                image = opened.convert("RGB")
                short = min(image.size)
                if short < spec.RESIZE_SHORT:
                    scale = spec.RESIZE_SHORT / short
                    size = (math.ceil(image.width * scale), math.ceil(image.height * scale))
                    image = image.resize(size, Image.Resampling.BICUBIC)
                    upscaled += 1
                arrays.append(np.ascontiguousarray(np.asarray(image)))
        return arrays, upscaled

    return ctx.persisted(f"augment-decoded-{ctx.dataset.fingerprint}-{sample.identity}", decode)


def _fixed_size(images: list[np.ndarray]) -> list[np.ndarray]:
    from PIL import Image

    return [
        np.asarray(Image.fromarray(im).resize((FIXED_SIDE, FIXED_SIDE), Image.Resampling.BILINEAR))
        for im in images
    ]


def _output_megapixels(output: Any, images_per_item: int) -> float:
    shape = tuple(output.shape)
    channels_first = hasattr(output, "detach") or (len(shape) == 3 and shape[0] == 3)
    if len(shape) == 4:
        return shape[0] * shape[2] * shape[3] / 1e6
    h, w = (shape[1], shape[2]) if channels_first and len(shape) == 3 else (shape[0], shape[1])
    return h * w / 1e6 * images_per_item


def _agreement_columns(ctx: CaseContext, key: str, kind: str, name: str) -> dict[str, Any]:
    """The row's agreement columns: every library's agreement on this transform, computed once
    per session (worker processes share it through the scratch folder)."""
    from imgbench.augment import verify

    agreements = ctx.persisted(
        f"augment-agreements-{kind}-{name}",
        lambda: (
            verify.check_transform(name) if kind == "transform" else verify.check_pipeline(name)
        ),
    )
    agreement = next((a for a in agreements if a.key == key), None)
    columns: dict[str, Any] = {
        "agreement": agreement.flag if agreement else "not verified: no result"
    }
    if agreement is not None and agreement.reference and agreement.check == "compare":
        columns.update(
            agreement_reference=agreement.reference,
            agreement_mean_abs=agreement.mean_abs,
            agreement_max_abs=agreement.max_abs,
            agreement_tolerance=str(agreement.tolerance),
        )
    return columns


def prepare(ctx: CaseContext, case: Case) -> Workload:
    import time

    plan = ctx.plan(AugmentPlan)
    lib = get_library(f"{case.library}/{case.variant}")
    params = case.params
    limit = min(ctx.max_images, plan.max_images)
    images, upscaled = decoded_images(ctx, limit)
    if not images:
        raise Skip(f"dataset {ctx.dataset.name} has no usable images")
    batch = params.get("batch_size")
    if params.get("input_size"):
        images = _fixed_size(images)
    if "transform" in params:
        kind, name = "transform", params["transform"]
        build = lib.transforms()[name]
    else:
        kind, name = "pipeline", params["pipeline"]
        build = lib.pipelines(batched=batch is not None)[name]
    op = build()
    if batch:
        n_batches = max(1, math.ceil(len(images) / batch))
        pool = [images[i % len(images)] for i in range(n_batches * batch)]
        groups = [pool[i : i + batch] for i in range(0, len(pool), batch)]
        items = [make_batch(group, op.input) for group in groups]
    else:
        groups = [[im] for im in images]
        items = [make_input(im, op.input) for im in images]
    per_item = batch or 1

    # untimed: the first input tells the cost; a case beyond the budget keeps fewer inputs;
    # every kept input then runs once (it must work, and gives the output size)
    start = time.perf_counter()
    first = op.fn(items[0])
    seconds_per_item = time.perf_counter() - start
    rounds = ctx.settings.rounds + ctx.settings.warmup_rounds  # the session's, overrides included
    affordable = max(1, int(plan.budget_s / max(seconds_per_item * rounds, 1e-9)))
    extra: dict[str, Any] = {"inputs_upscaled": upscaled}
    if affordable < len(items) and ctx.measure == "wall":  # a counted pass is never cut by time
        extra["items_cut_from"] = len(items)
        items = items[:affordable]
    outputs = [first, *(op.fn(item) for item in items[1:])]
    paths = [entry.path for entry in ctx.entries(limit=limit)]

    def where(i: int, j: int) -> str:
        k = (i * batch + j) % len(images) if batch else i
        return f"image {k} ({paths[k]})" if k < len(paths) else f"image {k}"

    checked = check_outputs(
        lib, kind, name, op, outputs, groups[: len(items)], where, batched=bool(batch)
    )  # on the case's own images, untimed: shape, dtype, range, and the reference's output
    if checked.problem is not None:
        raise CaseFailed(f"{lib.key} {kind} {name}: output check failed on {checked.problem}")
    extra.update(checked.extra())
    extra.update(_agreement_columns(ctx, lib.key + ("@batch" if batch else ""), kind, name))
    input_bytes = sum(im.nbytes for im in images)
    return Workload(
        items=items,
        fn=op.fn,
        images_per_item=per_item,
        bytes_per_round=int(input_bytes * len(items) * per_item / len(images)),
        megapixels_per_round=sum(_output_megapixels(o, per_item) for o in outputs),
        cache_method="n/a: decoded arrays in memory",
        extra=extra,
    )
