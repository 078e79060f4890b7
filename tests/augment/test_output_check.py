"""Every augmentation case checks its outputs on its own images before timing: shape, dtype and
range as the parameter table says, and deterministic ones against the reference library."""

from __future__ import annotations

from pathlib import Path

import pytest

import imgbench.augment.cases as augment_cases
from imgbench.augment.cases import prepare
from imgbench.augment.outputs import FAIL_FACTOR, REFERENCE_IMAGES
from imgbench.augment.plan import AugmentPlan
from imgbench.augment.registry import get_library
from imgbench.controls import case_context
from imgbench.measure.case import Case, Workload, spec_case
from imgbench.measure.context import CaseContext
from imgbench.measure.errors import CaseFailed
from imgbench.profiles import get_profile
from tests.augment.broken_ops import LIBRARY as BROKEN


@pytest.fixture(scope="module")
def ctx(tiny_dataset: Path) -> CaseContext:
    from imgbench import datasets

    profile = get_profile("quick")
    return case_context(
        datasets.load_dataset(str(tiny_dataset)),
        profile,
        max_images=profile.plan(AugmentPlan).max_images,
    )


@pytest.fixture
def with_broken(monkeypatch: pytest.MonkeyPatch) -> None:
    """``prepare`` finds the broken library by its key; the real ones stay the references."""

    def find(key: str):  # type: ignore[no-untyped-def]
        return BROKEN if key == BROKEN.key else get_library(key)

    monkeypatch.setattr(augment_cases, "get_library", find)


def _case(key: str, transform: str | None = None, pipeline: str | None = None) -> Case:
    lib = BROKEN if key == BROKEN.key else get_library(key)
    params: dict[str, object] = {"transform": transform} if transform else {"pipeline": pipeline}
    params |= {"input": lib.input, "threads": 1}
    return spec_case(lib, stage="augment", prepare=prepare, params=params)


def _failure(ctx: CaseContext, case: Case) -> str:
    with pytest.raises(CaseFailed) as failed:
        case.prepare(ctx, case)
    return str(failed.value)


@pytest.mark.usefixtures("with_broken")
def test_wrong_values_fail_against_the_reference(ctx: CaseContext) -> None:
    first = ctx.entries(limit=1)[0].path
    reason = _failure(ctx, _case(BROKEN.key, transform="hflip"))
    assert reason.startswith(
        f"broken/numpy transform hflip: output check failed on image 0 ({first})"
    )
    assert "max abs diff" in reason and "vs torchvision/v2-tensor" in reason


@pytest.mark.usefixtures("with_broken")
@pytest.mark.parametrize(
    ("kind", "name", "problem"),
    [
        ("transform", "vflip", "shape (255, "),
        ("transform", "invert", "dtype float32, expected uint8"),
        ("pipeline", "light", "shape (224, 223, 3), expected (224, 224, 3)"),
    ],
)
def test_wrong_shape_or_dtype_fails(ctx: CaseContext, kind: str, name: str, problem: str) -> None:
    case = _case(BROKEN.key, **{kind: name})
    reason = _failure(ctx, case)
    assert f"broken/numpy {kind} {name}: output check failed on image 0 (" in reason
    assert problem in reason


@pytest.mark.usefixtures("with_broken")
def test_a_small_difference_is_flagged_and_measured(ctx: CaseContext) -> None:
    """4 grey levels off a tolerance of mean 2: beyond the table, within FAIL_FACTOR x."""
    assert FAIL_FACTOR * 2.0 > 4
    workload = prepare(ctx, _case(BROKEN.key, transform="resize"))
    check = workload.extra["output_check"]
    assert check.startswith("flagged: image 0 (") and "measured" in check
    assert workload.extra["output_reference"] == "torchvision/v2-tensor"
    assert 2.0 < workload.extra["output_mean_abs"] < 4.5


def _prepared(ctx: CaseContext, key: str, **params: str) -> Workload:
    return prepare(ctx, _case(key, **params))


def test_healthy_cases_record_what_was_verified(ctx: CaseContext) -> None:
    n = len(ctx.entries(limit=ctx.plan(AugmentPlan).max_images))
    compared = _prepared(ctx, "opencv/numpy", transform="hflip").extra
    assert compared["verified_outputs"] == n
    assert compared["output_check"] == "pass (vs torchvision/v2-tensor)"
    assert compared["output_compared"] == min(n, REFERENCE_IMAGES)
    assert compared["output_max_abs"] == 0.0
    reference = _prepared(ctx, "torchvision/v2-tensor", transform="hflip").extra
    assert reference["output_check"] == "pass (reference)" and "output_compared" not in reference
    random = _prepared(ctx, "albumentations/numpy", transform="random_crop").extra
    assert random["output_check"] == "pass (shape/dtype/range)"
    pipeline = _prepared(ctx, "pillow/pil", pipeline="light").extra
    assert pipeline["output_check"] == "pass (vs torchvision/v2-tensor)"
    assert pipeline["verified_outputs"] == n


def test_a_known_disagreement_is_measured_and_says_so(ctx: CaseContext) -> None:
    """Kornia's rotate90 keeps HxW: on the non-square fixture images its shape is wrong."""
    extra = _prepared(ctx, "kornia/tensor", transform="rotate90").extra
    assert extra["output_check"].startswith("known disagreement (RandomRotation90 keeps HxW")
    assert "expected (" in extra["output_check"]
