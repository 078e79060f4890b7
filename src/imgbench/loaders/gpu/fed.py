"""The ``feed-*`` cases: the DataLoader's batches delivered to the device, with or without the
training step. Timed and checked as every loader row is (``imgbench.loaders.run.LoaderRun``:
first-batch check, drain, steady rate, CPU use), with the device's part inside the timing."""

from __future__ import annotations

import functools
from typing import Any

from imgbench.measure.case import Case, Workload
from imgbench.measure.context import CaseContext

CACHED_STEPS = 10  # steps timed for the step's own rate on a cached batch


def build_feed(ctx: CaseContext, params: dict[str, Any]) -> Any:
    """The CPU loader for the case's feed, wrapped so its batches arrive on the device."""
    from imgbench.loaders.cases import make_source
    from imgbench.loaders.gpu.feed import DeviceFeed
    from imgbench.loaders.gpu.feeds import BYTES, FEEDS, TORCHDATA_NODES
    from imgbench.loaders.gpu.ops import BytesDataset, GpuAugment, GpuDecoder, collate_bytes
    from imgbench.loaders.libs.torch_dataloader import TorchLoader
    from imgbench.loaders.pipeline import NO_AUGMENT, PipelineConfig, SamplePipeline
    from imgbench.loaders.registry import pipeline_config

    feed = FEEDS[params["feed"]]
    device = params["device"]
    loader: Any
    if feed.loader == TORCHDATA_NODES:
        from imgbench.loaders.libs.torchdata_nodes import TorchdataNodesLoader

        config = pipeline_config(feed.pipeline)
        loader = TorchdataNodesLoader(
            SamplePipeline(make_source(ctx, config), config),
            {
                "workers": params["workers"],
                "batch_size": params["batch_size"],
                "method": "process",
                "prefetch_factor": 2,
            },
        )
    else:
        loader_params = {
            "workers": params["workers"],
            "batch_size": params["batch_size"],
            "prefetch_factor": 2,
            "persistent_workers": True,
            "start_method": "fork",
            # the prefetcher copies from pinned memory too (Apex's recipe: pin_memory=True);
            # there is no pinning for a CPU device (the tests)
            "pin_memory": feed.transfer in ("pinned-nonblocking", "prefetcher")
            and str(device).startswith("cuda"),
        }
        if feed.pipeline == BYTES:
            source = make_source(ctx, PipelineConfig(augment=NO_AUGMENT))
            loader = TorchLoader(
                BytesDataset(source),  # type: ignore[arg-type]  # len and [i]: map-style
                loader_params,
                collate_fn=collate_bytes,
            )
        else:
            config = pipeline_config(feed.pipeline)
            loader = TorchLoader(SamplePipeline(make_source(ctx, config), config), loader_params)
    return DeviceFeed(
        loader,
        device,
        feed.transfer,  # type: ignore[arg-type]  # one of TRANSFERS (FEEDS says which)
        decode=GpuDecoder(feed.gpu_decoder, device) if feed.gpu_decode else None,
        augment=GpuAugment("batch") if feed.gpu_augment else None,
        sync=params["consumer"] == "copy",
    )


def prepare_feed(ctx: CaseContext, case: Case) -> Workload:
    """Start the feed, measure the step's own rate, and time batches (and steps) as they come."""
    import torch

    from imgbench.loaders.checks import BatchExpectation, check_batch, known_labels
    from imgbench.loaders.gpu.device import device_name
    from imgbench.loaders.gpu.feeds import AU_TARGET, FEEDS, SIDE
    from imgbench.loaders.gpu.step import StepCompute, cached_rate, step_and_batch
    from imgbench.loaders.run import LoaderRun

    params = dict(case.params)
    device = torch.device(params["device"])
    batch = int(params["batch_size"])
    side = int(params.get("side", SIDE))
    step, images, labels = step_and_batch(params, SIDE)
    step_rate = cached_rate(step, images, labels, int(params.get("cached_steps", CACHED_STEPS)))
    del images, labels
    feed = build_feed(ctx, params)
    compute = StepCompute(step, feed, batch / step_rate) if params["consumer"] != "copy" else None
    workers = int(params["workers"])
    n_batches = int(params["batches_per_round"])
    expect = BatchExpectation(batch, "chw", "float32", known_labels(feed.loader.pipeline.source))
    run = LoaderRun(
        feed,
        f"gpu feed {params['feed']} ({workers} workers)",
        parallel=max(1, workers),
        warmup_batches=ctx.settings.warmup_rounds * n_batches,
        drain_batches=workers * 2,
        compute=compute,  # type: ignore[arg-type]  # duck-typed: seconds, kind, run()
        check=functools.partial(check_batch, expect=expect),
    )
    run.extra.update(
        feed=params["feed"],
        feed_transfer=FEEDS[params["feed"]].transfer,
        feed_loader=FEEDS[params["feed"]].loader,
        consumer=params["consumer"],
        step_images_per_s_cached=step_rate,
        first_batch_expected=expect.describe(),
        device=device_name(device),
        au_method="CUDA events around each step: busy time over wall time of the timed steps"
        if device.type == "cuda"
        else "the step's wall time (CPU: synchronous)",
    )
    if feed.decode is not None and FEEDS[params["feed"]].gpu_decoder != "nvjpeg":
        from imgbench.loaders.gpu.ops import jpeg_batch

        feed.decode(jpeg_batch(ctx, 1))  # decodes on the host: NoGpuDecoderError, a skip
    run.start()
    problem = step.check(*feed.last[:2]) if feed.last is not None else "no batch"
    if problem:
        run.close()
        raise RuntimeError(f"{params['model']} on the feed's batch: {problem}")

    def close() -> None:
        run.close()
        rate = run.extra.get("steady_images_per_s")
        if rate:
            run.extra["gpus_kept_at_90"] = rate / (AU_TARGET * step_rate)

    copied = _copied_bytes_per_image(params["feed"], side)
    if copied:
        run.extra["copied_bytes_per_image"] = copied
    return Workload(
        items=list(range(n_batches)),
        fn=run.step,
        images_per_item=batch,
        bytes_per_round=n_batches * batch * copied,  # mb_per_s_median: the copy's rate
        megapixels_per_round=n_batches * batch * side * side / 1e6,
        cache_method="warm: the pool of images is re-read every epoch and stays in the page cache",
        extra=run.extra,
        close=close,
        runs_ahead=True,
    )


def _copied_bytes_per_image(feed: str, side: int) -> int:
    """Bytes of one image crossing to the device: float32 or uint8 3 x side x side; 0 where
    the images' sizes vary (decoded images, encoded files)."""
    from imgbench.loaders.gpu.feeds import FEEDS

    pipeline = FEEDS[feed].pipeline
    return {"default": 4, "uint8": 1}.get(pipeline, 0) * 3 * side * side
