"""The first batch of every loader is checked before timing, and loader rows name the versions of
every library their pipeline ran."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import psutil
import pytest
import torch

from imgbench.loaders import cases
from imgbench.loaders.checks import BatchExpectation, check_batch, expectation
from imgbench.loaders.pipeline import NO_AUGMENT, PipelineConfig
from imgbench.loaders.plan import LoaderPlan
from imgbench.loaders.run import BatchCheckError
from imgbench.machine import dist_version
from imgbench.measure.context import CaseContext
from imgbench.profiles import get_profile
from tests.loaders.faults import FloatPixels, ShiftsLabels

PLAN = get_profile("quick").plan(LoaderPlan)
FLOAT = BatchExpectation(4, "chw", "float32", frozenset({0, 1}))


def _prepare(
    ctx: CaseContext, library: str, workers: int, config: PipelineConfig, wrap: Any = None
) -> Any:
    case = cases.loader_case(
        library,
        workers,
        plan=PLAN,
        config=config,
        prepare=functools.partial(cases.prepare_loader, wrap=wrap),
    )
    return case.prepare(ctx, case)


def _no_workers_left() -> bool:
    me = psutil.Process()
    return not [c for c in me.children(recursive=True) if c.cmdline() == me.cmdline()]


@pytest.mark.parametrize(("library", "workers"), [("torch-dataloader", 0), ("threadpool", 2)])
def test_wrong_labels_fail_before_timing(
    photo_ctx: CaseContext, library: str, workers: int
) -> None:
    with pytest.raises(BatchCheckError) as failed:
        _prepare(photo_ctx, library, workers, cases.DEFAULT_PIPELINE, wrap=ShiftsLabels)
    message = str(failed.value)
    assert message.startswith(f"{library} ({workers} workers): first batch check failed: labels [")
    assert "[100, 101]" in message and "not among the dataset's labels [0, 1]" in message
    assert _no_workers_left()


def test_wrong_dtype_fails_the_decode_only_pipeline(photo_ctx: CaseContext) -> None:
    config = PipelineConfig(augment=NO_AUGMENT)
    with pytest.raises(BatchCheckError, match=r"first batch check failed: image 0 is float32, "):
        _prepare(photo_ctx, "torch-dataloader", 2, config, wrap=FloatPixels)
    assert _no_workers_left()


@pytest.mark.parametrize(
    ("config", "dtype", "versions"),
    [
        (cases.DEFAULT_PIPELINE, "float32", {"albumentations"}),
        (PipelineConfig(recipe="train-uint8"), "uint8", {"albumentations"}),
        (PipelineConfig(format="lmdb", decoder="pillow/open-convert"), "float32", {"lmdb"}),
    ],
)
def test_a_healthy_loader_records_the_check_and_its_versions(
    photo_ctx: CaseContext, config: PipelineConfig, dtype: str, versions: set[str]
) -> None:
    workload = _prepare(photo_ctx, "torch-dataloader", 2, config)
    try:
        extra = workload.extra
        assert extra["first_batch_check"] == "pass"
        assert extra["first_batch"]["dtype"] == dtype
        assert extra["first_batch"]["shape"] == [8, 3, 224, 224]
        assert set(extra["first_batch"]["labels"]) <= {0, 1}
        assert extra["first_batch_expected"].startswith("images 8 x 3 x 224 x 224")
        library, variant = config.decoder.split("/")
        from imgbench.readers.registry import find_spec

        decoder = find_spec(library, variant).dist
        assert decoder is not None
        pinned = extra["pipeline_versions"]
        assert {"numpy", "torch", decoder, *versions} <= set(pinned)
        assert pinned["numpy"] == dist_version("numpy") == np.__version__
        assert pinned[decoder] == dist_version(decoder)
    finally:
        workload.close()


def test_the_decode_only_pipeline_is_a_list_of_uint8_arrays(photo_ctx: CaseContext) -> None:
    workload = _prepare(photo_ctx, "threadpool", 2, PipelineConfig(augment=NO_AUGMENT))
    try:
        assert workload.extra["first_batch_check"] == "pass"
        assert workload.extra["first_batch"]["dtype"] == "uint8"
        assert "albumentations" not in workload.extra["pipeline_versions"]
        assert workload.extra["pipeline_versions"]["python"]  # a standard-library loader
    finally:
        workload.close()


def _batch(images: Any, labels: Any = (0, 1, 1, 0)) -> tuple[Any, Any, None, None]:
    return images, labels, None, None


def _normalised(n: int = 4) -> torch.Tensor:
    return torch.rand(n, 3, 224, 224) * 4.0 - 2.0


def test_check_batch_catches_each_kind_of_wrong_batch() -> None:
    labels = torch.tensor([0, 1, 1, 0])
    assert check_batch(_batch(_normalised(), labels), FLOAT) is None
    cases_and_problems = [
        (_batch(_normalised(3), labels), "images have shape (3, 3, 224, 224), expected (4, 3,"),
        (_batch(_normalised().permute(0, 2, 3, 1), labels), "images have shape (4, 224, 224, 3)"),
        (_batch(_normalised().double(), labels), "images are float64, expected float32"),
        (_batch(_normalised() * 100, labels), "outside normalised"),  # 0..255 floats
        (_batch(torch.full((4, 3, 224, 224), float("nan")), labels), "non-finite"),
        (_batch(torch.zeros(4, 3, 224, 224), labels), "every value is 0: blank images"),
        (_batch(_normalised(), torch.tensor([0.0, 1.0, 1.0, 0.0])), "labels are float32"),
        (_batch(_normalised(), torch.tensor([0, 1])), "labels have shape (2,), expected (4,)"),
        (_batch(_normalised(), torch.tensor([0, 1, 7, 0])), "labels [7] are not among"),
    ]
    for batch, problem in cases_and_problems:
        found = check_batch(batch, FLOAT)
        assert found is not None and problem in found, (problem, found)
    uint8 = BatchExpectation(4, "chw", "uint8", None)
    assert (
        check_batch(_batch(torch.randint(0, 256, (4, 3, 224, 224), dtype=torch.uint8)), uint8)
        is None
    )
    assert "expected uint8" in str(check_batch(_batch(_normalised()), uint8))


class FakeTfTensor:
    """What tf.data hands over: an eager tensor with ``numpy()``, no ``detach``."""

    def __init__(self, array: np.ndarray) -> None:
        self._array = array

    def numpy(self) -> np.ndarray:
        return self._array


def test_tensorflow_batches_are_checked_in_their_own_layout() -> None:
    config = PipelineConfig(decoder="tensorflow/decode-jpeg", augment="tensorflow")
    expect = expectation(config, 4, [0, 1])
    assert expect.layout == "hwc" and expect.dtype == "float32"
    images = FakeTfTensor(np.random.default_rng(0).uniform(-2, 2, (4, 224, 224, 3)).astype("f4"))
    labels = FakeTfTensor(np.array([1, 0, 0, 1], dtype=np.int64))
    assert check_batch(_batch(images, labels), expect) is None
    chw = FakeTfTensor(np.zeros((4, 3, 224, 224), dtype=np.float32))
    assert "expected (4, 224, 224, 3)" in str(check_batch(_batch(chw, labels), expect))
    keras = expectation(
        PipelineConfig(decoder="pillow/open-convert", augment="pillow/pil"), 4, None
    )
    assert keras.layout == "chw"  # keras-pydataset runs imgbench's pipeline: 3 x 224 x 224 numpy
