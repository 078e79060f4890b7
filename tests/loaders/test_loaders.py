"""Every main-environment loader on real photos: right batches, stage times, no worker left."""

from __future__ import annotations

import numpy as np
import psutil
import pytest
import torch

from imgbench.loaders import cases
from imgbench.loaders.pipeline import NO_AUGMENT, FileSource, PipelineConfig, SamplePipeline
from imgbench.loaders.plan import LoaderPlan
from imgbench.loaders.registry import get_loader
from imgbench.loaders.run import LoaderRun
from imgbench.measure.context import CaseContext
from imgbench.profiles import get_profile

PLAN = get_profile("quick").plan(LoaderPlan)


def _run(
    ctx: CaseContext,
    library: str,
    workers: int,
    config: PipelineConfig = cases.DEFAULT_PIPELINE,
    **knobs,
):  # type: ignore[no-untyped-def]
    case = cases.loader_case(library, workers, plan=PLAN, config=config, **knobs)
    workload = case.prepare(ctx, case)
    batches = []
    original = workload.fn.__self__  # the LoaderRun
    try:
        for _ in range(3):
            for item in workload.items:
                workload.fn(item)
        batches.append(next(original._iterator))
    finally:
        workload.close()
    return workload, batches[0]


@pytest.mark.parametrize(
    ("library", "workers", "knobs"),
    [
        ("torch-dataloader", 0, {}),
        ("torch-dataloader", 2, {}),
        ("torch-dataloader", 1, {"persistent_workers": False}),
        ("threadpool", 2, {}),
        ("queue-feeder", 2, {}),
        ("prefetch-generator", 1, {}),
        ("sharded-iterable", 0, {}),
        ("sharded-iterable", 2, {}),
    ],
)
def test_loader_batches_and_cleanup(
    photo_ctx: CaseContext, library: str, workers: int, knobs: dict
) -> None:
    workload, batch = _run(photo_ctx, library, workers, **knobs)
    images, labels, stage_s, collate_s = batch
    assert images.shape == (8, 3, 224, 224) and images.dtype == torch.float32
    assert images.is_contiguous()
    assert set(labels.tolist()) <= {0, 1}
    assert stage_s.shape == (8, 3) and (stage_s > 0).all()
    assert collate_s > 0
    extra = workload.extra
    assert set(extra["stage_times_s"]) == {"read", "decode", "augment", "collate"}
    assert extra["time_to_first_batch_s"] > 0
    assert extra["workers_alive_after_close"] == [] and extra["workers_left_after_reap"] == []
    if get_loader(library).processes and workers:
        assert len(extra["worker_pids"]) >= workers
        assert not [
            p
            for p in extra["worker_pids"]
            if psutil.pid_exists(p) and psutil.Process(p).status() != "zombie"
        ]
        assert {p["process"] for p in extra["memory_timeline"]} >= {"main", "worker-0"}
    if library == "torch-dataloader":
        assert extra["epoch_start_s"] > 0


def test_labels_follow_class_folders(photo_ctx: CaseContext) -> None:
    source = cases.make_source(photo_ctx, cases.DEFAULT_PIPELINE)
    assert isinstance(source, FileSource)
    pipeline = SamplePipeline(source, cases.DEFAULT_PIPELINE)
    for i in range(len(pipeline)):
        image, label, times = pipeline[i]
        folder = source.paths[i].decode().split("/")[-2]
        assert label == int(folder[-1])
        assert image.shape == (3, 224, 224) and image.dtype == np.float32
        assert len(times) == 3


def test_pass_through_returns_the_decoded_arrays(photo_ctx: CaseContext) -> None:
    _, batch = _run(photo_ctx, "torch-dataloader", 2, PipelineConfig(augment=NO_AUGMENT))
    images = batch[0]
    assert isinstance(images, list) and len(images) == 8
    assert {im.shape for im in images} <= {(240, 320, 3), (320, 240, 3)}
    assert all(im.dtype == np.uint8 for im in images)


@pytest.mark.parametrize("fmt", ["lmdb", "npy-decoded"])
def test_packed_formats_through_forked_workers(photo_ctx: CaseContext, fmt: str) -> None:
    """LMDB handles must be opened per process; decoded-array formats skip the decoder."""
    workload, batch = _run(photo_ctx, "torch-dataloader", 2, PipelineConfig(format=fmt))
    assert batch[0].shape == (8, 3, 224, 224)
    if fmt == "npy-decoded":
        assert workload.extra["stage_times_s"]["decode"] < 1e-4


def test_forkserver_start_method(photo_ctx: CaseContext) -> None:
    workload, batch = _run(photo_ctx, "torch-dataloader", 1, start_method="forkserver")
    assert batch[0].shape == (8, 3, 224, 224)
    assert workload.extra["workers_alive_after_close"] == []


def test_loader_run_closes_after_a_failed_start(photo_ctx: CaseContext) -> None:
    from imgbench.loaders.base import LoaderError

    class Broken:
        def __len__(self) -> int:
            return 16

        def __getitem__(self, i: int):  # type: ignore[no-untyped-def]
            raise OSError("disk gone")

    pipeline = SamplePipeline(Broken(), cases.DEFAULT_PIPELINE)
    loader = get_loader("torch-dataloader").load().build(pipeline, {"workers": 2, "batch_size": 4})
    run = LoaderRun(loader, "broken", parallel=2, warmup_batches=0)
    with pytest.raises(
        LoaderError, match=r"broken: OSError: Caught OSError .* -> OSError: disk gone"
    ):
        run.start()
    assert run.extra["workers_alive_after_close"] == []
