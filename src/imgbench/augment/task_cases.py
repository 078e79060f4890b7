"""Augment cases of the tasks beyond classification: segmentation, crop-ocr and its one-hot heads.

Verification before timing: every library runs the segmentation recipe with the same crop and
flip forced (``TaskOp.pinned``, no jitter) on synthetic pairs; its masks must equal the
reference's (torchvision) exactly and its images lie within ``SEG_IMAGE_MEAN_TOL`` grey levels.
crop-ocr is deterministic and compared with Pillow (the seed's own calls) within tolerance.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from imgbench.augment import tasks
from imgbench.augment.plan import AugmentPlan
from imgbench.augment.registry import AugmentLibrary, get_library, libraries
from imgbench.measure.case import Case, Workload
from imgbench.measure.context import CaseContext
from imgbench.measure.errors import CaseFailed, Skip

VERIFY_SIZES = ((500, 375), (300, 451), (640, 480))  # the synthetic pairs verification draws
GEOMETRIES_PER_PAIR = 3


def verify_pairs() -> list[tuple[np.ndarray, np.ndarray]]:
    from imgbench.datasets.pairs_synth import draw_pair

    rng = np.random.default_rng(0)
    return [draw_pair(w, h, rng) for w, h in VERIFY_SIZES]


@dataclass(frozen=True)
class TaskAgreement:
    key: str
    flag: str  # pass | pass (reference) | flagged: ... | error: ...
    mask_pixels_differing: int = 0
    image_mean_abs: float = 0.0


def _denorm(chw: np.ndarray) -> np.ndarray:
    from imgbench.augment.base import IMAGENET_MEAN, IMAGENET_STD

    mean = np.asarray(IMAGENET_MEAN)[:, None, None]
    std = np.asarray(IMAGENET_STD)[:, None, None]
    return (chw.astype(np.float64) * std + mean) * 255.0


def _task_outputs(
    lib: AugmentLibrary,
    task: str,
    pairs: list[tuple[np.ndarray, np.ndarray]],
    geometries: list[list[Any]],
) -> list[list[np.ndarray]]:
    """The library's recipe on every pair (a segmentation recipe at each pinned geometry)."""
    op = lib.task_recipes()[task]()
    got = []
    for (image, mask), geos in zip(pairs, geometries, strict=True):
        sample = tasks.make_sample(image, mask, op.sample)
        if task == "segmentation" and op.pinned is not None:
            for g in geos:
                got.append([tasks.as_numpy(x) for x in op.pinned(sample, g)])
        else:
            got.append([tasks.as_numpy(op.fn(sample))])
    return got


def verify_task(task: str) -> list[TaskAgreement]:
    """Every installed library's recipe against the reference, on synthetic pairs."""
    pairs = verify_pairs()
    random.seed(0)
    geometries = [
        [tasks.draw_geometry(im.shape[1], im.shape[0]) for _ in range(GEOMETRIES_PER_PAIR)]
        for im, _ in pairs
    ]
    outputs: dict[str, list[list[np.ndarray]]] = {}
    results: list[TaskAgreement] = []
    for lib in libraries():  # in an isolated env, its build of a library stands for it
        if not tasks.supports(lib.task_key, task) or lib.task_key in outputs:
            continue
        if lib.unmet_requirement():
            continue
        try:
            outputs[lib.task_key] = _task_outputs(lib, task, pairs, geometries)
        except Exception as exc:  # a library that breaks is named, never hidden
            results.append(TaskAgreement(lib.task_key, f"error: {type(exc).__name__}: {exc}"))
    reference = tasks.REFERENCE[task]
    if reference not in outputs:
        return [*results, *(TaskAgreement(k, "not verified: no reference") for k in outputs)]
    for key, got in outputs.items():
        if key == reference:
            results.append(TaskAgreement(key, "pass (reference)"))
            continue
        results.append(_compare(task, key, got, outputs[reference]))
    return results


def _compare(
    task: str, key: str, got: list[list[np.ndarray]], ref: list[list[np.ndarray]]
) -> TaskAgreement:
    differing, worst = 0, 0.0
    for out, want in zip(got, ref, strict=True):
        if task == "segmentation":
            differing += int((out[1] != want[1]).sum())
            if not np.array_equal(out[2], want[2]):
                differing = max(differing, 1)
            worst = max(worst, float(np.abs(_denorm(out[0]) - _denorm(want[0])).mean()))
        else:
            worst = max(worst, float(np.abs(out[0] * 255.0 - want[0] * 255.0).mean()))
    tolerance = tasks.SEG_IMAGE_MEAN_TOL if task == "segmentation" else tasks.OCR_IMAGE_MEAN_TOL
    problems = []
    if differing:
        total = sum(o[1].size for o in got)
        problems.append(f"{differing} of {total} mask pixels differ from {tasks.REFERENCE[task]}")
    if worst > tolerance:
        problems.append(f"image mean abs {worst:.2f} > {tolerance:g} grey levels")
    flag = "pass" if not problems else "flagged: " + "; ".join(problems)
    return TaskAgreement(key, flag, differing, round(worst, 3))


Decoded = Callable[[CaseContext, int], tuple[list[np.ndarray], int]]


def _pairs(
    ctx: CaseContext, limit: int, decoded_images: Decoded
) -> tuple[list[tuple[np.ndarray, np.ndarray]], str]:
    """The dataset's own pairs when its folder has a pair layout, else masks drawn for its images."""
    from imgbench.datasets import pairs

    root = getattr(ctx.dataset, "root", None)
    layout = pairs.detect(root) if root is not None else None
    if root is not None and layout is not None and layout.pairs:
        source = f"files ({layout.name}, {len(layout.pairs)} pairs)"
        unpaired = layout.unpaired_lines()
        if unpaired:  # the row goes on with the pairs it has, and names what it left out
            source += f"; {len(unpaired)} without a partner, first: {unpaired[0]}"
        return pairs.load_pairs(root, layout, limit), source
    images, _ = decoded_images(ctx, limit)
    from imgbench.datasets.pairs_synth import draw_pair

    rng = np.random.default_rng(0)
    masks = [draw_pair(im.shape[1], im.shape[0], rng)[1] for im in images]
    return list(zip(images, masks, strict=True)), "drawn by imgbench (the dataset has no masks)"


def prepare(ctx: CaseContext, case: Case, decoded_images: Decoded) -> Workload:
    """A task case's workload; ``decoded_images`` is the stage's (cases.py) session-wide decode."""
    plan = ctx.plan(AugmentPlan)
    lib = get_library(f"{case.library}/{case.variant}")
    params = case.params
    task = params["task"]
    limit = min(ctx.max_images, plan.max_images)
    extra: dict[str, Any] = {"task_recipe": tasks.RECIPES[task]}
    if params.get("part") == "onehot":
        return _onehot_workload(lib, int(params["classes"]), extra)
    op = lib.task_recipes()[task]()
    if task == "segmentation":
        try:
            pairs, source = _pairs(ctx, limit, decoded_images)
        except tasks.MaskError as exc:  # one line: the file and its problem
            raise CaseFailed(f"{lib.key} {task}: {exc}") from None
        extra["masks"] = source
    else:
        images, _ = decoded_images(ctx, limit)
        pairs = [(im, np.zeros(im.shape[:2], np.uint8)) for im in images]
    if not pairs:
        raise Skip(f"dataset {ctx.dataset.name} has no usable images")
    items = [
        tasks.make_sample(im, m if task == "segmentation" else None, op.sample) for im, m in pairs
    ]
    outputs = [op.fn(item) for item in items]  # untimed: every input must work
    for i, out in enumerate(outputs):
        problem = check_output(task, out)
        if problem:
            raise CaseFailed(f"{lib.key} {task}: output check failed on pair {i}: {problem}")
    agreements = ctx.persisted(f"augment-task-agreements-{task}", lambda: verify_task(task))
    found = next((a for a in agreements if a.key == lib.task_key), None)
    extra["agreement"] = found.flag if found else "not verified: no result"
    if found is not None and found.flag != "pass (reference)":
        extra.update(
            agreement_reference=tasks.REFERENCE[task],
            agreement_mask_pixels_differing=found.mask_pixels_differing,
            agreement_mean_abs=found.image_mean_abs,
        )
    input_bytes = sum(im.nbytes + (m.nbytes if task == "segmentation" else 0) for im, m in pairs)
    side = tasks.SEG_SIZE if task == "segmentation" else 1
    return Workload(
        items=items,
        fn=op.fn,
        images_per_item=1,
        bytes_per_round=input_bytes,
        megapixels_per_round=len(items)
        * (side * side if task == "segmentation" else tasks.OCR_SIZE[0] * tasks.OCR_SIZE[1])
        / 1e6,
        cache_method="n/a: decoded arrays in memory",
        extra=extra,
    )


def check_output(task: str, out: Any) -> str | None:
    """Shape, dtype and range of one recipe output; None when right."""
    if task == "crop-ocr":
        array = tasks.as_numpy(out)
        want = (tasks.OCR_SIZE[1], tasks.OCR_SIZE[0], 3)
        if array.shape != want or array.dtype != np.float32:
            return f"{array.shape} {array.dtype}, want {want} float32"
        if array.min() < 0 or array.max() > 1:
            return f"values {array.min():.3f}..{array.max():.3f} outside [0, 1]"
        return None
    image, mask, onehot = (tasks.as_numpy(x) for x in out)
    size = tasks.SEG_SIZE
    if image.shape != (3, size, size) or image.dtype != np.float32:
        return f"image {image.shape} {image.dtype}, want (3, {size}, {size}) float32"
    if mask.shape != (size, size) or mask.dtype != np.int64:
        return f"mask {mask.shape} {mask.dtype}, want ({size}, {size}) int64"
    if onehot.shape != (tasks.N_CLASSES, size, size) or onehot.dtype != np.float32:
        return f"one-hot {onehot.shape} {onehot.dtype}"
    if not np.array_equal(onehot.argmax(0), mask) or not np.all(onehot.sum(0) == 1):
        return "one-hot does not match the mask"
    return None


def _onehot_workload(lib: AugmentLibrary, classes: int, extra: dict[str, Any]) -> Workload:
    """Four heads of OCR_BATCH labels -> one-hot: one item is one batch (images_per_item)."""
    op = lib.task_recipes()["onehot"]()
    rng = np.random.default_rng(0)
    batches: list[tuple[int, list[Any]]] = []
    for _ in range(4):
        heads = [rng.integers(0, classes, tasks.OCR_BATCH) for _ in range(tasks.OCR_HEADS)]
        if op.sample == "torch":
            import torch

            batches.append((classes, [torch.from_numpy(h) for h in heads]))
        else:
            batches.append((classes, heads))
    first = op.fn(batches[0])
    for head, labels in zip(first, batches[0][1], strict=True):
        array = tasks.as_numpy(head)
        want = np.asarray(labels if not hasattr(labels, "numpy") else labels.numpy())
        if array.shape != (tasks.OCR_BATCH, classes) or array.dtype != np.float32:
            raise CaseFailed(f"{lib.key} one-hot: {array.shape} {array.dtype}")
        if not np.array_equal(array.argmax(1), want) or not np.all(array.sum(1) == 1):
            raise CaseFailed(f"{lib.key} one-hot: rows do not match the labels")
    out_bytes = tasks.OCR_HEADS * tasks.OCR_BATCH * classes * 4
    extra.update(onehot_bytes_per_batch=out_bytes, agreement="pass (checked against the labels)")
    return Workload(
        items=batches,
        fn=op.fn,
        images_per_item=tasks.OCR_BATCH,
        bytes_per_round=out_bytes * len(batches),
        megapixels_per_round=0.0,
        cache_method="n/a: labels in memory",
        extra=extra,
    )
