"""The accelerator half on the CPU: planning and skip reasons, the feed and prefetcher logic on
CPU tensors, the training step's shapes at a tiny size, a feed case end to end with
``gpu_device="cpu"``, and the ``gpu`` profile. No CUDA is mocked: where CUDA exists, the
CUDA-only assertions run instead of skipping."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
import torch

from imgbench.loaders.cases import loader_cases
from imgbench.loaders.checks import NORM_HIGH, NORM_LOW
from imgbench.loaders.gpu.cases import DALI_WHEEL, dali_missing, plan_cases, prepare_gpu
from imgbench.loaders.gpu.device import NO_CUDA, cuda_missing
from imgbench.loaders.gpu.feed import DeviceFeed, SideStreamPrefetcher, normalise
from imgbench.loaders.gpu.feeds import FEEDS
from imgbench.loaders.gpu.ops import (
    GpuAugment,
    GpuDecoder,
    collate_bytes,
    decode_batch,
    encoded_tensor,
)
from imgbench.loaders.gpu.step import StepCompute, TrainStep, cached_rate
from imgbench.loaders.plan import LoaderPlan
from imgbench.profiles import get_profile
from tests.gpu.conftest import make_context

CUDA = torch.cuda.is_available()


def test_every_part_is_planned_and_skips_without_cuda() -> None:
    cases = plan_cases(LoaderPlan())
    variants = [c.variant for c in cases]
    assert len(variants) == len(set(variants))
    assert "h2d-ceiling" in variants and "decode-nvjpeg-batched" in variants
    assert "step-cached-resnet50" in variants and "augment-v2-per-batch" in variants
    assert {"augment-kornia-per-image", "augment-kornia-per-batch"} <= set(variants)
    assert {"decode-nvimgcodec-batched", "decode-dali-mixed"} <= set(variants)
    kornia = next(c for c in cases if c.variant == "augment-kornia-per-batch")
    assert kornia.params["augment_library"] == "kornia"
    for name in FEEDS:
        assert {f"feed-{name}+copy", f"feed-{name}+resnet50"} <= set(variants)
    reasons = {c.unmet_requirement() for c in cases}
    # a row whose library (kornia, torchdata, nvImageCodec, DALI) is missing says so instead
    reasons = {r for r in reasons if not (r or "").startswith("gpu: cannot import")}
    assert reasons == ({None} if CUDA else {NO_CUDA})


def test_the_cpu_device_is_always_available_and_cuda_says_why_not() -> None:
    assert cuda_missing("cpu") is None
    assert cuda_missing("cuda") == (None if CUDA else NO_CUDA)


def test_a_row_whose_library_is_missing_says_so_after_cuda() -> None:
    from imgbench.loaders.gpu.cases import _available

    assert _available("cpu", ("torch",), None) is None
    why = _available("cpu", ("no_such_module_xyz",), None)
    assert why is not None and why.startswith("gpu: cannot import no_such_module_xyz")
    assert _available("cpu", (), lambda: "own reason") == "own reason"
    if not CUDA:  # CUDA's reason comes first, before any optional module is imported
        assert _available("cuda", ("no_such_module_xyz",), None) == NO_CUDA


def test_the_default_profile_plans_the_gpu_rows_and_quick_does_not() -> None:
    default = [c for c in loader_cases(get_profile("default")) if c.library == "gpu"]
    assert len(default) == len(plan_cases(LoaderPlan()))
    assert not [c for c in loader_cases(get_profile("quick")) if c.library == "gpu"]


def test_the_gpu_profile_runs_the_accelerator_half_and_the_cpu_loaders_it_compares() -> None:
    profile = get_profile("gpu")
    plan = profile.plan(LoaderPlan)
    libraries = {c.library for c in loader_cases(profile)}
    assert libraries == {"torch-dataloader", "gpu"}
    assert plan.gpu_model == "resnet50" and plan.gpu_batch_size == 256
    assert profile.environments == ()


def test_normalise_maps_uint8_to_the_normalised_range() -> None:
    images = torch.tensor([0, 255], dtype=torch.uint8).repeat(2, 3, 1, 1).reshape(2, 3, 1, 2)
    out = normalise(images)
    assert out.dtype == torch.float32
    assert out.min().item() == pytest.approx(NORM_LOW, abs=1e-5)
    assert out.max().item() == pytest.approx(NORM_HIGH, abs=1e-5)


def _uint8_batches(n: int) -> Any:
    for i in range(n):
        images = torch.full((2, 3, 4, 4), i, dtype=torch.uint8)
        yield images, torch.tensor([i, i]), None, None


def test_the_prefetcher_hands_over_batches_in_order_one_ahead() -> None:
    source = _uint8_batches(3)
    prefetcher = SideStreamPrefetcher(source, "cpu")
    assert prefetcher.stream is None  # no second stream on the CPU
    first = next(prefetcher)
    assert first[1].tolist() == [0, 0] and first[0].dtype == torch.float32
    assert torch.equal(first[0], normalise(torch.zeros(2, 3, 4, 4, dtype=torch.uint8)))
    assert next(prefetcher)[1].tolist() == [1, 1]  # batch 2 is preloaded meanwhile
    with pytest.raises(StopIteration):
        next(prefetcher)  # preloading past the last batch ends the stream


class _ListLoader:
    def __init__(self, batches: list[Any]) -> None:
        self.items = batches
        self.closed = False

    def batches(self) -> Any:
        return iter(self.items)

    def worker_pids(self) -> list[int]:
        return []

    def close(self) -> None:
        self.closed = True


@pytest.fixture(scope="module")
def jpegs(photo_dir: Path) -> list[torch.Tensor]:
    return [encoded_tensor(p.read_bytes()) for p in sorted(photo_dir.rglob("*.jpg"))[:4]]


def test_a_feed_of_encoded_bytes_decodes_augments_and_normalises(
    jpegs: list[torch.Tensor],
) -> None:
    batch = collate_bytes([(t, i % 2, (0.0, 0.0, 0.0)) for i, t in enumerate(jpegs)])
    loader = _ListLoader([batch])
    feed = DeviceFeed(
        loader,
        "cpu",
        "pageable-blocking",
        decode=lambda encoded: decode_batch(encoded, "cpu"),
        augment=GpuAugment("batch"),
    )
    images, labels, _, _ = next(feed.batches())
    assert images.shape == (4, 3, 224, 224) and images.dtype == torch.float32
    assert images.min().item() >= NORM_LOW - 0.01 and images.max().item() <= NORM_HIGH + 0.01
    assert labels.tolist() == [0, 1, 0, 1]
    assert feed.last is not None and feed.last[0] is images
    feed.close()
    assert loader.closed


def test_a_synchronised_feed_times_the_wait_and_each_device_part(
    jpegs: list[torch.Tensor],
) -> None:
    """What tells reads from decode from augmentation on the device: each stage's median time."""
    pytest.importorskip("nvidia.nvimgcodec")
    batch = collate_bytes([(t, i % 2, (0.0, 0.0, 0.0)) for i, t in enumerate(jpegs)])
    feed = DeviceFeed(
        _ListLoader([batch, batch]),
        "cpu",
        "pageable-blocking",
        decode=GpuDecoder("nvimgcodec", "cpu"),
        augment=GpuAugment("batch"),
        sync=True,
    )
    assert not feed.extra  # nothing timed yet
    got = list(feed.batches())
    assert len(got) == 2 and got[1][0].shape == (4, 3, 224, 224)
    stages = feed.extra["feed_stage_ms_median"]
    assert set(stages) == {"wait", "decode", "augment", "normalise"}
    assert stages["decode"] > 0 and stages["augment"] > 0
    assert feed.extra["feed_stage_batches"] == 2


def test_a_feed_of_decoded_arrays_copies_each_as_chw_and_augments_on_the_device() -> None:
    import numpy as np

    rng = np.random.default_rng(0)
    arrays = [rng.integers(0, 256, (h, w, 3), dtype=np.uint8) for h, w in ((240, 320), (300, 260))]
    batch = (arrays, torch.tensor([0, 1]), None, None)
    feed = DeviceFeed(
        _ListLoader([batch]), "cpu", "pageable-blocking", augment=GpuAugment("batch"), sync=True
    )
    images, labels, _, _ = next(feed.batches())
    assert images.shape == (2, 3, 224, 224) and images.dtype == torch.float32
    assert labels.tolist() == [0, 1]


@pytest.mark.parametrize("library", ["v2", "kornia"])
@pytest.mark.parametrize("per", ["image", "batch"])
def test_gpu_augment_gives_uint8_224_batches(
    jpegs: list[torch.Tensor], per: str, library: str
) -> None:
    if library == "kornia":
        pytest.importorskip("kornia")
    images = decode_batch(jpegs, "cpu")
    assert all(im.shape[0] == 3 and im.dtype == torch.uint8 for im in images)
    out = GpuAugment(per, library)(images)  # type: ignore[arg-type]
    assert out.shape == (4, 3, 224, 224) and out.dtype == torch.uint8
    assert out.float().std() > 1  # pixels, not a constant


@pytest.mark.parametrize("kind", ["nvimgcodec", "dali"])
def test_the_other_decoders_give_torchvisions_shapes_and_pixels(
    jpegs: list[torch.Tensor], kind: str
) -> None:
    """On the CPU device nvImageCodec runs its CPU-only back-end and DALI ``device="cpu"``: the
    same calls the device makes with CUDA (where they decode on the GPU)."""
    pytest.importorskip("nvidia.nvimgcodec" if kind == "nvimgcodec" else "nvidia.dali")
    decoder = GpuDecoder(kind, "cpu", batch_size=len(jpegs))
    try:
        out = decoder(jpegs)
    finally:
        decoder.close()
    reference = decode_batch(jpegs, "cpu")
    assert [tuple(im.shape) for im in out] == [tuple(im.shape) for im in reference]
    for image, ref in zip(out, reference, strict=True):
        assert image.dtype == torch.uint8 and image.device.type == "cpu"
        assert (image.float() - ref.float()).abs().mean() < 2.0  # libjpeg-turbo, both


def test_dali_is_available_here_or_its_reason_names_the_wheel() -> None:
    why = dali_missing()
    assert why is None or DALI_WHEEL in why


def test_the_step_trains_at_a_tiny_size_and_checks_shapes() -> None:
    torch.manual_seed(0)
    step = TrainStep("resnet18", "cpu", num_classes=10)
    images, labels = torch.randn(2, 3, 32, 32), torch.tensor([1, 7])
    assert step.check(images, labels) is None
    assert "float32" in (step.check(images.to(torch.uint8), labels) or "")
    assert "labels" in (step.check(images, torch.tensor([1])) or "")
    before = [p.detach().clone() for p in step.model.parameters()][:3]
    loss = step(images, labels)
    assert torch.isfinite(loss)
    after = list(step.model.parameters())[:3]
    assert any(not torch.equal(a, b) for a, b in zip(before, after, strict=True))
    assert cached_rate(step, images, labels, steps=1, warmup=0) > 0


def test_resnet50_channels_last_gives_one_logit_row_per_image() -> None:
    """The device's model, built as the device builds it: random weights, channels-last."""
    step = TrainStep("resnet50", "cpu")
    assert step.check(torch.randn(2, 3, 32, 32), torch.tensor([3, 999])) is None
    assert sum(p.numel() for p in step.model.parameters()) > 25_000_000


def test_the_step_as_compute_runs_on_the_feeds_last_batch() -> None:
    step = TrainStep("resnet18", "cpu", num_classes=10)
    feed = DeviceFeed(_ListLoader(list(_uint8_batches(1))), "cpu", "pageable-blocking")
    compute = StepCompute(step, feed, cached_s_per_batch=0.5)
    with pytest.raises(RuntimeError, match="before the feed"):
        compute.run()
    next(feed.batches())
    assert compute.run() > 0  # the CPU: the step's wall time is its busy time
    assert compute.kind.startswith("resnet18-bf16") and compute.seconds == 0.5


def test_a_feed_case_runs_end_to_end_on_the_cpu(photo_dir: Path) -> None:
    """The whole feed case (DataLoader workers, the prefetcher, the step's cached rate, GPUs at
    90%) through its prepare, with the plan's device set to the CPU, a small batch and model, and
    the copy as the consumer (the step as consumer: test_the_step_as_compute_...)."""
    plan = dataclasses.replace(
        LoaderPlan(),
        gpu_device="cpu",
        gpu_batch_size=4,
        gpu_model="mobilenet_v3_small",  # any torchvision.models builder: a cheap one here
        gpu_workers=(2,),
        gpu_batches_per_round=2,
        gpu_feeds=("uint8-prefetcher",),
    )
    case = next(c for c in plan_cases(plan) if c.variant == "feed-uint8-prefetcher+copy")
    assert case.unmet_requirement() is None
    case = dataclasses.replace(case, params={**case.params, "cached_steps": 1})
    workload = prepare_gpu(make_context(photo_dir), case)
    try:
        for item in [*workload.items, *workload.items]:
            assert workload.fn(item) == 4
    finally:
        assert workload.close is not None
        workload.close()
    extra = workload.extra
    assert extra["first_batch_check"] == "pass"
    assert extra["step_images_per_s_cached"] > 0 and "au" not in extra
    assert extra["gpus_kept_at_90"] > 0
    assert extra["workers_left_after_reap"] == []


def _cpu_plan(**changes: Any) -> LoaderPlan:
    return dataclasses.replace(
        LoaderPlan(),
        gpu_device="cpu",
        gpu_batch_size=4,
        gpu_model="mobilenet_v3_small",
        gpu_workers=(2,),
        gpu_batches_per_round=2,
        **changes,
    )


def test_the_torchdata_nodes_feed_runs_end_to_end_on_the_cpu(photo_dir: Path) -> None:
    """The uint8 pipeline through torchdata.nodes (process workers; PinMemory only where CUDA
    is), then the device's part: the same checks as the DataLoader's feeds."""
    pytest.importorskip("torchdata.nodes")
    plan = _cpu_plan(gpu_feeds=("uint8-torchdata-nodes",))
    case = next(c for c in plan_cases(plan) if c.variant == "feed-uint8-torchdata-nodes+copy")
    case = dataclasses.replace(case, params={**case.params, "cached_steps": 1})
    workload = prepare_gpu(make_context(photo_dir), case)
    try:
        for item in workload.items:
            assert workload.fn(item) == 4
    finally:
        assert workload.close is not None
        workload.close()
    extra = workload.extra
    assert extra["first_batch_check"] == "pass"
    assert "Prefetcher" in extra["torchdata_nodes"]
    assert extra["feed_stage_ms_median"]["wait"] >= 0
    assert {"copy", "normalise"} <= set(extra["feed_stage_ms_median"])
    assert extra["workers_left_after_reap"] == []


@pytest.mark.parametrize("variant", ["decode-nvimgcodec-batched", "decode-dali-mixed"])
def test_the_decode_rows_run_their_decoder_on_the_cpu_device(photo_dir: Path, variant: str) -> None:
    case = next(c for c in plan_cases(_cpu_plan(gpu_feeds=())) if c.variant == variant)
    if case.unmet_requirement():
        pytest.skip(str(case.unmet_requirement()))
    workload = prepare_gpu(make_context(photo_dir), case)
    try:
        out = workload.fn(0)
        assert len(out) == 4 and all(im.shape[0] == 3 for im in out)
    finally:
        if workload.close is not None:
            workload.close()
    assert workload.images_per_item == 4


@pytest.mark.skipif(not CUDA, reason=NO_CUDA)
def test_on_cuda_the_prefetcher_uses_a_side_stream() -> None:
    prefetcher = SideStreamPrefetcher(_uint8_batches(2), "cuda")
    assert prefetcher.stream is not None
    assert next(prefetcher)[0].device.type == "cuda"


def _row(variant: str, rate: float, **extra: Any) -> dict[str, Any]:
    import json

    return {
        "stage": "loader",
        "library": "gpu",
        "variant": variant,
        "status": "ok",
        "reason": None,
        "images_per_s_median": rate,
        "mb_per_s_median": rate * 3 * 224 * 224 / 1e6,
        "workers": 16,
        "params_json": json.dumps({"batch_size": 256, "decode_threads": 16}),
        "extra_json": json.dumps({"device": "NVIDIA H100", **extra}),
    }


def test_the_summary_names_each_figure_the_device_check_reports() -> None:
    import pandas as pd

    from imgbench.answer.gpu_summary import summarise

    frame = pd.DataFrame(
        [
            _row("decode-nvjpeg-batched", 9000.0),
            _row("decode-cpu-threads", 3000.0),
            _row("decode-nvimgcodec-batched", 10000.0),
            _row("augment-kornia-per-batch", 1000.0),
            _row("h2d-ceiling", 1.0, unit="one copy"),
            _row("h2d-uint8-pinned-nonblocking", 100000.0),
            _row("step-cached-resnet50", 2800.0),
            _row("feed-uint8-pinned+resnet50", 1500.0, au=0.5),
            _row("feed-nvjpeg-gpu-augment+resnet50", 2600.0, au=0.93),
            _row("feed-uint8-pinned+copy", 1600.0, gpus_kept_at_90=0.63),
            _row(
                "feed-nvimgcodec-gpu-augment+copy",
                2000.0,
                feed_stage_ms_median={"wait": 90.0, "decode": 30.5, "augment": 12.0},
            ),
            {**_row("h2d-float32-pageable-blocking", 0.0), "status": "failed", "reason": "boom"},
        ]
    )
    text = summarise(frame)
    assert "device: NVIDIA H100" in text
    assert "nvJPEG batched decode: 9,000 images/s" in text and "16 CPU threads: 3,000" in text
    assert "step-cached-resnet50: 2,800 images/s" in text
    assert "best CPU-decode feed with the step: feed-uint8-pinned+resnet50, AU 50%" in text
    assert "best GPU-decode feed with the step: feed-nvjpeg-gpu-augment+resnet50, AU 93%" in text
    assert "keeps 0.63 GPUs at 90%" in text and "failed: h2d-float32-pageable-blocking" in text
    assert "ms/batch wait 90.0 decode 30.5 augment 12.0" in text
    assert "other GPU decoders: decode-nvimgcodec-batched 10,000 images/s" in text
    assert "augmentation on the device: augment-kornia-per-batch 1,000 images/s" in text
    skipped = frame.assign(status="skipped", reason=NO_CUDA)
    assert summarise(skipped) == f"every gpu row was skipped or failed: {NO_CUDA}"
