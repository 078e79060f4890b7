"""Segmentation and crop-ocr recipes in each library, on real synthetic image + mask files."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from imgbench.augment import tasks
from imgbench.augment.cases import _prepare_task, augment_cases
from imgbench.augment.plan import AugmentPlan
from imgbench.augment.registry import get_library
from imgbench.augment.task_cases import check_output, verify_pairs, verify_task
from imgbench.controls import case_context
from imgbench.datasets.pairs_synth import generate_pairs
from imgbench.measure.case import Case
from imgbench.measure.context import CaseContext
from imgbench.measure.errors import CaseFailed
from imgbench.profiles import get_profile

SEG = (
    "torchvision/v2-tensor",
    "albumentations/numpy",
    "opencv/numpy",
    "kornia/tensor",
    "pillow/pil",
)
OCR = ("pillow/pil", "albumentations/numpy", "opencv/numpy", "torchvision/v2-tensor")


@pytest.fixture(scope="module")
def pairs_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("seg-pairs")
    generate_pairs(root, 3, size=(320, 240), codec="png", masks="palette", seed=1)
    return root


def _pinned(key: str, geometries: list[tasks.Geometry]) -> list[list[np.ndarray]]:
    op = get_library(key).task_recipes()["segmentation"]()
    assert op.pinned is not None
    out = []
    for (image, mask), g in zip(verify_pairs(), geometries, strict=True):
        sample = tasks.make_sample(image, mask, op.sample)
        out.append([tasks.as_numpy(x) for x in op.pinned(sample, g)])
    return out


@pytest.mark.parametrize("key", SEG)
def test_segmentation_recipe_shapes_and_one_hot(key: str) -> None:
    op = get_library(key).task_recipes()["segmentation"]()
    random.seed(3)
    for image, mask in verify_pairs():
        out = op.fn(tasks.make_sample(image, mask, op.sample))
        assert check_output("segmentation", out) is None
        # the mask keeps only classes of the input: nearest never invents a class
        assert set(np.unique(tasks.as_numpy(out[1]))) <= set(np.unique(mask).tolist())


def test_pinned_masks_agree_exactly_where_nearest_is_defined_alike() -> None:
    # crop sizes whose resize to 224 has no whole-number source coordinate (no rounding tie)
    geometries = [
        tasks.Geometry(53, 0, 431, 371, True),
        tasks.Geometry(4, 37, 295, 262, False),
        tasks.Geometry(85, 31, 487, 403, True),
    ]
    outputs = {key: _pinned(key, geometries) for key in SEG}
    ref = outputs["torchvision/v2-tensor"]
    for key in SEG[1:]:
        for got, want in zip(outputs[key], ref, strict=True):
            assert np.array_equal(got[1], want[1]), key
            assert np.array_equal(got[2], want[2]), key
            image_diff = np.abs(got[0] - want[0]).mean() * 0.226 * 255
            assert image_diff < tasks.SEG_IMAGE_MEAN_TOL, (key, image_diff)


def test_opencv_nearest_differs_from_torch_only_on_rounding_ties() -> None:
    """Where x * crop / 224 is a whole number, OpenCV (double) and torch (float32) may pick
    neighbouring source rows or columns; they agree everywhere else."""
    geometries = [
        tasks.Geometry(10, 10, 280, 300, False),
        tasks.Geometry(5, 5, 280, 420, True),
        tasks.Geometry(85, 31, 488, 404, False),
    ]
    cv2_family = _pinned("opencv/numpy", geometries)
    albumentations = _pinned("albumentations/numpy", geometries)
    assert all(np.array_equal(a[1], b[1]) for a, b in zip(cv2_family, albumentations, strict=True))
    torch_family = _pinned("torchvision/v2-tensor", geometries)
    for got, want, g in zip(cv2_family, torch_family, geometries, strict=True):
        rows, cols = np.nonzero(got[1] != want[1])
        ties = ((cols * g.width) % 224 == 0) | ((rows * g.height) % 224 == 0)
        if g.flip:  # flipped: the tie column is counted from the right
            ties |= ((223 - cols) * g.width) % 224 == 0
        assert ties.all()


@pytest.fixture(scope="module")
def seg_verified() -> tuple:
    """``verify_task("segmentation")`` (every library's recipe against the reference, the
    module's costliest call), once: its test reads it, and the two segmentation cases' contexts
    are handed it under the name their prepare looks for, instead of computing it again each."""
    return verify_task("segmentation")


def _with_agreements(ctx: CaseContext, agreements: tuple) -> CaseContext:
    ctx.persisted("augment-task-agreements-segmentation", lambda: agreements)
    return ctx


def test_verify_segmentation_names_each_library(seg_verified: tuple) -> None:
    results = {a.key: a for a in seg_verified}
    assert set(results) == set(SEG)
    assert results["torchvision/v2-tensor"].flag == "pass (reference)"
    assert results["kornia/tensor"].flag == "pass" and results["pillow/pil"].flag == "pass"
    for key in ("albumentations/numpy", "opencv/numpy"):  # the OpenCV nearest family
        assert results[key].flag == "pass" or "mask pixels differ" in results[key].flag
        assert results[key].image_mean_abs < tasks.SEG_IMAGE_MEAN_TOL


def test_crop_ocr_agrees_with_the_seed_calls() -> None:
    image = np.asarray(Image.open(_photo()).convert("RGB"))
    results = {a.key: a for a in verify_task("crop-ocr")}
    assert set(results) == set(OCR)
    assert all(a.flag.startswith("pass") for a in results.values()), results
    for key in OCR:
        op = get_library(key).task_recipes()["crop-ocr"]()
        out = tasks.as_numpy(op.fn(tasks.make_sample(image, None, op.sample)))
        assert check_output("crop-ocr", out) is None
    # a narrow image: the box leaves it, and PIL pads with zeros; so do the others
    narrow = image[:20, :200]
    for key in OCR:
        op = get_library(key).task_recipes()["crop-ocr"]()
        out = tasks.as_numpy(
            op.fn(tasks.make_sample(np.ascontiguousarray(narrow), None, op.sample))
        )
        assert out.shape == (32, 128, 3)
        assert out[-8:, -40:].max() < 0.05, key  # the padded corner stays black


def _photo() -> str:
    from skimage import data

    return str(Path(data.__file__).parent / "chelsea.png")


@pytest.mark.parametrize("key", ["opencv/numpy", "torchvision/v2-tensor"])
def test_onehot_heads_case(key: str, tiny_dataset: Path) -> None:
    ctx = _ctx(tiny_dataset)
    case = _task_case(key, part="onehot")
    assert case.params["classes"] == tasks.OCR_CLASSES and case.columns["task"] == "crop-ocr"
    workload = _prepare_task(ctx, case)
    heads = workload.fn(workload.items[0])
    assert len(heads) == tasks.OCR_HEADS
    assert tuple(heads[0].shape) == (tasks.OCR_BATCH, tasks.OCR_CLASSES)
    assert workload.images_per_item == tasks.OCR_BATCH
    assert workload.extra["onehot_bytes_per_batch"] == 4 * 128 * 21_000 * 4


def _ctx(root: Path) -> CaseContext:
    from imgbench import datasets

    full = get_profile("full")
    return case_context(datasets.load_dataset(str(root)), full, max_images=4)


def _task_case(key: str, **params: object) -> Case:
    for case in augment_cases(get_profile("full")):
        same = f"{case.library}/{case.variant}" == key and "task" in case.params
        if same and all(case.params.get(k) == v for k, v in params.items()):
            return case
    raise LookupError((key, params))


def test_segmentation_case_reads_the_pairs_and_carries_its_agreement(
    pairs_root: Path, seg_verified: tuple
) -> None:
    ctx = _with_agreements(_ctx(pairs_root), seg_verified)
    case = _task_case("opencv/numpy", task="segmentation")
    workload = _prepare_task(ctx, case)
    assert workload.extra["masks"].startswith("files (images+masks, 3 pairs)")
    assert workload.extra["agreement"].startswith(("pass", "flagged"))
    opencv = next(a for a in seg_verified if a.key == "opencv/numpy")
    assert workload.extra["agreement"] == opencv.flag  # the verified result, carried
    assert len(workload.items) == 3
    assert check_output("segmentation", workload.fn(workload.items[0])) is None


def test_a_dataset_without_masks_gets_drawn_masks(tiny_dataset: Path, seg_verified: tuple) -> None:
    ctx = _with_agreements(_ctx(tiny_dataset), seg_verified)
    workload = _prepare_task(ctx, _task_case("kornia/tensor", task="segmentation"))
    assert workload.extra["masks"].startswith("drawn by imgbench")


def test_profiles_run_tasks_only_in_full() -> None:
    assert get_profile("full").plan(AugmentPlan).tasks == ("segmentation", "crop-ocr")
    for name in ("quick", "default"):
        assert not any("task" in c.params for c in augment_cases(get_profile(name)))
        assert {c.columns.get("task") for c in augment_cases(get_profile(name))} == {
            "classification"
        }


def test_a_mask_of_another_size_fails_the_row_naming_the_file(tmp_path: Path) -> None:
    generate_pairs(tmp_path, 2, size=(160, 120), codec="jpeg", masks="rgb", seed=2)
    Image.open(tmp_path / "masks" / "00001.png").resize((80, 60)).save(
        tmp_path / "masks" / "00001.png"
    )
    with pytest.raises(
        CaseFailed, match=r"masks/00001.png: mask is 80x60, its image .* is 160x120"
    ):
        _prepare_task(_ctx(tmp_path), _task_case("opencv/numpy", task="segmentation"))


def test_verify_cli_task_table() -> None:
    from typer.testing import CliRunner

    from imgbench.cli import app

    runner = CliRunner(env={"COLUMNS": "200"})
    result = runner.invoke(app, ["verify", "augment", "--task", "crop-ocr", "--strict"])
    assert result.exit_code == 0, result.output
    assert "pillow/pil" in result.output and "pass (reference)" in result.output
    result = runner.invoke(app, ["verify", "augment", "--task", "seg"])
    assert result.exit_code != 0 and "unknown task seg" in result.output
