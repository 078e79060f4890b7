"""Which cases each profile asks for, and what a prepared workload hands the harness."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from imgbench.augment import spec
from imgbench.augment.cases import augment_cases, prepare
from imgbench.augment.plan import AugmentPlan
from imgbench.controls import case_context
from imgbench.measure.case import Workload
from imgbench.measure.context import CaseContext
from imgbench.profiles import get_profile


def _params(profile: str) -> list[dict]:
    return [
        dict(c.params) | {"key": f"{c.library}/{c.variant}"}
        for c in augment_cases(get_profile(profile))
    ]


def test_quick_is_small() -> None:
    params = _params("quick")
    assert 2 <= len({p["key"] for p in params}) <= 3
    assert {p.get("pipeline") for p in params} >= {"train-classification"}
    assert all(p["threads"] == 1 and "batch_size" not in p for p in params)


def test_default_has_its_transforms_and_pipeline_per_library() -> None:
    from imgbench.profiles import DEFAULT_TRANSFORMS

    params = _params("default")
    assert {p["transform"] for p in params if "transform" in p} == set(DEFAULT_TRANSFORMS)
    for row in (r for r in spec.ROWS if r.transform in DEFAULT_TRANSFORMS):
        assert any(
            p.get("transform") == row.transform and p["key"].startswith(row.library + "/")
            for p in params
        ), row
    pipelines = {(p["key"], p["pipeline"]) for p in params if "pipeline" in p}
    # six libraries in the main env, and pillow-simd's and AlbumentationsX's in their envs
    assert len(pipelines) == 8 * 1
    assert {p["key"] for p in params} >= {"pillow-simd/pil", "albumentationsx/numpy"}
    batches = {(p["key"], p["batch_size"]) for p in params if "batch_size" in p}
    assert batches == {("kornia/tensor", 32), ("torchvision/v2-tensor", 32)}
    assert any(p.get("pipeline") and p["threads"] is None for p in params)
    ids = [c.case_id for c in augment_cases(get_profile("default"))]
    assert len(ids) == len(set(ids))


def test_full_adds_batch_128_and_default_threads_for_transforms() -> None:
    params = _params("full")
    assert {p["batch_size"] for p in params if "batch_size" in p} == {32, 128}
    for row in spec.ROWS:  # every transform of the parameter table, in every library
        assert any(
            p.get("transform") == row.transform and p["key"].startswith(row.library + "/")
            for p in params
        ), row
    assert len({(p["key"], p["pipeline"]) for p in params if "pipeline" in p}) == 8 * 4
    assert any(p.get("transform") and p["threads"] is None for p in params)
    assert not any(
        p.get("transform") and p["threads"] is None and p["key"] == "pillow/pil" for p in params
    )


@pytest.fixture(scope="module")
def ctx(tiny_dataset: Path) -> CaseContext:
    from imgbench import datasets

    quick = get_profile("quick")
    return case_context(
        datasets.load_dataset(str(tiny_dataset)),
        quick,
        max_images=quick.plan(AugmentPlan).max_images,
    )


def _case(profile: str, key: str, **params):
    for case in augment_cases(get_profile(profile)):
        if f"{case.library}/{case.variant}" == key and all(
            case.params.get(k) == v for k, v in params.items()
        ):
            return case
    raise LookupError((key, params))


def _run(workload: Workload) -> list:
    return [workload.fn(item) for item in workload.items]


def test_prepared_transform_outputs_contiguous_and_carries_agreement(ctx: CaseContext) -> None:
    case = _case("quick", "albumentations/numpy", transform="hflip")
    workload = prepare(ctx, case)
    first = ctx.entries(limit=8)  # the sample of 8 (grown when 8 miss the folder's means)
    assert workload.images_per_round == len(first) >= 8
    small = sum(min(e.width, e.height) < spec.RESIZE_SHORT for e in first)
    assert small > 0  # the fixture has small photos, so the count below means something
    assert workload.extra["inputs_upscaled"] == small
    for out in _run(workload):
        assert isinstance(out, np.ndarray) and out.flags.c_contiguous and out.dtype == np.uint8
        assert min(out.shape[:2]) >= spec.RESIZE_SHORT  # small inputs were raised to 256
    assert workload.extra["agreement"] == "pass"
    assert workload.megapixels_per_round > 0 and workload.bytes_per_round > 0


def test_prepared_batch_pipeline(ctx: CaseContext) -> None:
    case = _case("default", "kornia/tensor", pipeline="train-classification", batch_size=32)
    workload = prepare(ctx, case)
    assert workload.images_per_item == 32
    (out, *_) = _run(workload)
    assert tuple(out.shape) == (32, 3, spec.SIZE, spec.SIZE) and out.is_contiguous()
    assert workload.extra["agreement"] == "pass (shape/dtype/range)"


def test_a_time_budget_cuts_timed_inputs_but_never_a_counted_pass(tiny_dataset: Path) -> None:
    """Under callgrind a case must count the same inputs on every machine: no wall-time cut."""
    from dataclasses import replace

    from imgbench import datasets

    quick = get_profile("quick")
    starved = replace(
        quick, plans={**quick.plans, "augment": replace(quick.plan(AugmentPlan), budget_s=1e-9)}
    )
    case = _case("quick", "albumentations/numpy", transform="hflip")
    dataset = datasets.load_dataset(str(tiny_dataset))
    sizes = {}
    for measure in ("wall", "instructions"):
        ctx = case_context(dataset, starved, max_images=8, measure=measure)
        sizes[measure] = prepare(ctx, case).images_per_round
    assert sizes == {"wall": 1, "instructions": len(ctx.entries())}
