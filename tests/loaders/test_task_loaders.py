"""Loaders on tasks beyond classification: segmentation pairs and crop-ocr's one-hot heads go
through the one loader pipeline, measured by the engine's Manager in the test process (no nested
pytest session; the worker server's path is tests/measure/'s and the shared quick run's), their
first batch checked at 0 and 2 workers; bad masks are named."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from imgbench.augment.tasks import N_CLASSES
from imgbench.controls import resolve
from imgbench.datasets.pairs_synth import generate_pairs
from imgbench.loaders import cases
from imgbench.loaders.base import Batch, LoaderError
from imgbench.loaders.checks import check_batch, expectation
from imgbench.loaders.plan import LoaderPlan
from imgbench.loaders.registry import pipeline_config
from imgbench.measure.case import Case
from imgbench.measure.manager import Manager, Outcome
from imgbench.measure.rounds import Measurement
from imgbench.profiles import ProfileChoice, get_profile
from imgbench.stages import planner
from tests.loaders.conftest import make_context


@pytest.fixture(scope="module")
def pair_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Ten synthetic pairs, images/ + masks/ (palette PNG), 320x240 JPEG."""
    root = tmp_path_factory.mktemp("seg-pairs")
    generate_pairs(root, 10, size=(320, 240))
    return root


PROFILE = """
[tool.imgbench.profiles.tasks]
base = "quick"
rounds = 2
warmup_rounds = 0
[tool.imgbench.profiles.tasks.loader]
libraries = ["torch-dataloader"]
task_pipelines = ["segmentation", "segmentation-torchvision", "crop-ocr"]
task_workers = [0, 2]
"""


@contextlib.contextmanager
def _session(tmp: Path, dataset: Path) -> Iterator[Manager]:
    """One engine session of the ``tasks`` profile (quick with the task sweep) on ``dataset``:
    the Manager measuring in this process (a worker server would start an interpreter and import
    torch again, for no property of the task loaders)."""
    (tmp / "pyproject.toml").write_text(PROFILE)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("IMGBENCH_PYPROJECT", str(tmp / "pyproject.toml"))
        choice = ProfileChoice("tasks")
        settings = resolve(
            choice.resolve(),
            {"min_case_s": 0.0, "min_round_s": 0.0, "process_model": "in-process"},
        )
        manager = Manager(settings, planner(choice), str(dataset))
        try:
            yield manager
        finally:
            manager.close()


@pytest.fixture(scope="module")
def pair_outcomes(
    pair_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> dict[tuple[str, int], Outcome]:
    """Each task's DataLoader case at 0 and 2 workers, measured in one session on the pairs."""
    with _session(tmp_path_factory.mktemp("tasks-profile"), pair_dir) as manager:
        return {
            (name, w): manager.measure(_case(name, w))
            for name in ("segmentation", "crop-ocr")
            for w in (0, 2)
        }


def _case(name: str, workers: int) -> Case:
    plan = get_profile("quick").plan(LoaderPlan)
    return cases.loader_case("torch-dataloader", workers, plan=plan, config=pipeline_config(name))


@pytest.mark.parametrize("workers", [0, 2])
@pytest.mark.parametrize("name", ["segmentation", "crop-ocr"])
def test_task_loader_case_runs_and_its_first_batch_passes(
    pair_outcomes: dict[tuple[str, int], Outcome], name: str, workers: int
) -> None:
    case = _case(name, workers)
    assert case.params["task"] == name and case.columns["task"] == name
    assert f"task={name}" in case.case_id
    outcome = pair_outcomes[name, workers]
    assert isinstance(outcome, Measurement), outcome
    extra = outcome.extra
    assert extra["first_batch_check"] == "pass"
    first = extra["first_batch"]
    if name == "segmentation":
        assert first["shape"] == [8, 3, 224, 224] and first["labels_shape"] == [8, 224, 224]
        assert set(first["mask_classes"]) <= set(range(N_CLASSES))
    else:
        assert first["shape"] == [8, 32, 128, 3] and first["labels_shape"] == [8, 4, 21_000]
        # the one-hot of the four heads, timed apart inside the collate (in the worker)
        assert extra["onehot_ms_per_batch"] > 0 and extra["onehot_batches"] >= 2
        whole = extra["stage_times_s"]["collate"] * 8  # the collate's mean per batch of 8
        assert extra["onehot_ms_per_batch_mean"] * 1e-3 <= whole + 1e-9  # a part of it


def test_segmentation_without_masks_draws_its_pairs(tiny_dataset: Path) -> None:
    """A dataset with no pair layout gets synthetic pairs written into the session's scratch
    (torchvision's recipe here: the second library of the sweep)."""
    ctx = make_context(tiny_dataset, max_images=8)
    case = _case("segmentation-torchvision", 0)
    workload = case.prepare(ctx, case)
    try:
        assert workload.extra["first_batch_check"] == "pass"
        assert workload.extra["first_batch"]["labels_shape"] == [8, 224, 224]
    finally:
        assert workload.close is not None
        workload.close()
        ctx.close()


def test_a_mask_with_a_foreign_colour_fails_the_row_naming_it(tmp_path: Path) -> None:
    generate_pairs(tmp_path, 8, size=(320, 240), masks="rgb")
    bad = np.array(Image.open(tmp_path / "masks" / "00003.png").convert("RGB"))
    bad[:5, :5] = (1, 2, 3)
    for n in range(8):  # every mask: whichever the sampler draws first fails the batch
        Image.fromarray(bad).save(tmp_path / "masks" / f"{n:05d}.png")
    ctx = make_context(tmp_path, max_images=8)
    case = _case("segmentation", 0)
    try:
        with pytest.raises(LoaderError) as failed:
            case.prepare(ctx, case)
    finally:
        ctx.close()
    reason = str(failed.value)
    assert reason.count("\n") == 0, reason
    assert "colour (1, 2, 3) not in the colour table" in reason
    assert "masks/0000" in reason


def _batch(images: torch.Tensor, labels: torch.Tensor) -> Batch:
    return images, labels, None, None


def test_checks_reject_wrong_masks_and_heads() -> None:
    seg = expectation(pipeline_config("segmentation"), 2, None)
    images = torch.rand(2, 3, 224, 224) * 2 - 1
    masks = torch.zeros(2, 224, 224, dtype=torch.int64)
    assert check_batch(_batch(images, masks), seg) is None
    masks[0, 0, 0] = N_CLASSES + 1
    assert "not classes of the colour table" in str(check_batch(_batch(images, masks), seg))
    assert "int32" in str(check_batch(_batch(images, masks.to(torch.int32)), seg))
    ocr = expectation(pipeline_config("crop-ocr"), 2, None)
    crops = torch.rand(2, 32, 128, 3)
    heads = torch.zeros(2, 4, 21_000)
    heads[:, :, 7] = 1
    assert check_batch(_batch(crops, heads), ocr) is None
    heads[0, 0, 8] = 1
    assert "not one-hot" in str(check_batch(_batch(crops, heads), ocr))
    assert "outside [0, 1]" in str(check_batch(_batch(crops * 255, heads), ocr))


def _task_workers(profile: str) -> dict[str, list[int]]:
    found: dict[str, list[int]] = {}
    for case in cases.loader_cases(get_profile(profile)):
        if "task" in case.params and case.library == "torch-dataloader":  # the DataLoader sweep
            name = case.params["pipeline"] + " " + case.params["task"]
            found.setdefault(name, []).append(case.params["workers"])
    return found


def test_profiles_run_the_task_loaders() -> None:
    cores = os.cpu_count() or 2
    sweep = list(range(cores + 1))
    assert _task_workers("full") == {
        "albumentations/numpy:segmentation segmentation": sweep,
        "torchvision/v2-tensor:segmentation segmentation": sweep,
        "albumentations/numpy:crop-ocr crop-ocr": sweep,
    }
    assert _task_workers("default") == {
        "albumentations/numpy:segmentation segmentation": [0, cores],
        "albumentations/numpy:crop-ocr crop-ocr": [cores],
    }
    assert _task_workers("quick") == {}
