"""The loader stage's ``gpu`` cases (registry entry ``gpu``, planned by :func:`plan_cases`).

Every case is planned on every machine; where ``plan.gpu_device`` is a CUDA device and CUDA is
absent, each is one skipped row with the reason "no CUDA device". The parts:

- ``h2d-*``: one batch (uint8 or float32, N x 3 x 224 x 224) copied host -> device, pinned or
  pageable, ``non_blocking`` or not, synchronised per copy; ``h2d-ceiling``: 256 MiB from pinned
  memory, the device's own copy ceiling in the same session. ``mb_per_s_median`` is the rate.
- ``decode-nvjpeg-batched``: ``torchvision.io.decode_jpeg(list, device=...)`` over a batch of the
  dataset's JPEG bytes (the bytes' copy included); ``decode-nvimgcodec-batched``: nvImageCodec's
  ``Decoder.decode`` on the same list; ``decode-dali-mixed``: DALI's ``fn.decoders.image`` with
  ``device="mixed"`` on it (each where the library imports:
  ``imgbench.loaders.gpu.ops.GpuDecoder``); ``decode-cpu-threads``: torchvision's decode on the CPU
  by one thread per core, the comparison.
- ``augment-{v2,kornia}-per-image`` / ``-per-batch``: the train recipe in torchvision v2 or
  kornia on decoded uint8 images already on the device (``imgbench.loaders.gpu.ops.GpuAugment``).
- ``step-cached-<model>``: the training step on one batch kept on the device: its own rate.
- ``feed-<feed>+<consumer>``: the DataLoader at ``gpu_workers`` workers, its batches on the
  device (``imgbench.loaders.gpu.feed``), then ``copy`` (nothing more: the loader's rate as the GPU
  receives it) or the model's step (AU from CUDA events). Each row records the step's cached rate
  measured in the same case and ``gpus_kept_at_90``: images/s over 0.9 x that rate.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable
from typing import Any

from imgbench.loaders.gpu.device import cuda_missing
from imgbench.loaders.gpu.feeds import FEEDS, SIDE
from imgbench.loaders.plan import LoaderPlan
from imgbench.measure.case import Case, Workload
from imgbench.measure.context import CaseContext
from imgbench.measure.errors import Skip

LIBRARY = "gpu"
CEILING_BYTES = 256 << 20
REQUIRES = ("torch", "torchvision")
# DALI's CUDA 13 wheel, measured 2026-11-27 (docs/gpu.md): far over the 64 MiB a device check
# may carry, so its rows skip there with this said
DALI_WHEEL = "nvidia-dali-cuda130 2.4.0 (a 199 MB download)"


H2D_DTYPES = ("uint8", "float32")


def plan_cases(plan: LoaderPlan) -> list[Case]:
    """Copies, decode, augmentation, the cached step, then every feed with each consumer."""
    batch = plan.gpu_batch_size
    cases = [_case("h2d-ceiling", plan, part="h2d-ceiling", bytes=CEILING_BYTES)]
    cases += [
        _case(
            f"h2d-{dtype}-{'pinned' if pinned else 'pageable'}-"
            f"{'nonblocking' if nb else 'blocking'}",
            plan,
            part="h2d",
            dtype=dtype,
            pinned=pinned,
            non_blocking=nb,
            batch_size=batch,
        )
        for dtype in H2D_DTYPES
        for pinned in (True, False)
        for nb in (True, False)
    ]
    cases += [
        _case("decode-nvjpeg-batched", plan, part="decode", decode="nvjpeg", batch_size=batch),
        _case(
            "decode-nvimgcodec-batched",
            plan,
            ("nvidia.nvimgcodec",),
            part="decode",
            decode="nvimgcodec",
            batch_size=batch,
        ),
        _case(
            "decode-dali-mixed",
            plan,
            part="decode",
            decode="dali",
            decode_threads=os.cpu_count() or 1,
            batch_size=batch,
            check=dali_missing,
        ),
        _case(
            "decode-cpu-threads",
            plan,
            part="decode",
            decode="cpu-threads",
            decode_threads=os.cpu_count() or 1,
            batch_size=batch,
        ),
    ]
    cases += [
        _case(f"augment-v2-per-{per}", plan, part="augment", per=per, batch_size=batch)
        for per in ("image", "batch")
    ]
    cases += [
        _case(
            f"augment-kornia-per-{per}",
            plan,
            ("kornia",),
            part="augment",
            per=per,
            augment_library="kornia",
            batch_size=batch,
            batches_per_round=1,  # 256 kornia calls per batch: one batch a round is enough
        )
        for per in ("image", "batch")
    ]
    cases.append(
        _case(
            f"step-cached-{plan.gpu_model}",
            plan,
            part="step",
            model=plan.gpu_model,
            batch_size=batch,
        )
    )
    for workers in plan.gpu_worker_counts():
        for name in plan.gpu_feeds:
            if name not in FEEDS:
                raise ValueError(f"gpu_feeds: unknown feed {name!r}; known: {sorted(FEEDS)}")
            for consumer in ("copy", plan.gpu_model):
                cases.append(
                    _case(
                        f"feed-{name}+{consumer}",
                        plan,
                        FEEDS[name].requires,
                        part="feed",
                        feed=name,
                        consumer=consumer,
                        model=plan.gpu_model,
                        workers=workers,
                        batch_size=batch,
                        batches_per_round=plan.gpu_batches_per_round,
                    )
                )
    return cases


def _case(
    variant: str,
    plan: LoaderPlan,
    requires: tuple[str, ...] = (),
    check: Callable[[], str | None] | None = None,
    **params: Any,
) -> Case:
    """One gpu case: ``requires`` the modules beyond torch and torchvision it imports, ``check``
    its own availability check after CUDA's."""
    params = {"device": plan.gpu_device, "threads": None, **params}
    params.setdefault("batches_per_round", plan.gpu_batches_per_round)
    return Case(
        stage="loader",
        library=LIBRARY,
        variant=variant,
        prepare=prepare_gpu,
        params=params,
        requires=REQUIRES,
        dist="torch",
        check=functools.partial(_available, plan.gpu_device, requires, check),
    )


def _available(
    device: str, modules: tuple[str, ...], check: Callable[[], str | None] | None
) -> str | None:
    """CUDA first, then the optional modules, then the case's own check. CUDA is asked before any
    of those modules is imported: on the H100 every row said "no CUDA device" once nvImageCodec,
    kornia and torchdata were installed and imported first."""
    from imgbench.library import missing_module

    return (
        cuda_missing(device)
        or missing_module(LIBRARY, modules)
        or (check() if check is not None else None)
    )


def dali_missing() -> str | None:
    """Why DALI cannot decode here: it does not import (on the device machine: its wheel is far
    over what a device check carries)."""
    from imgbench.library import missing_module

    why = missing_module(LIBRARY, ("nvidia.dali",))
    if why is None:
        return None
    return f"{why}; DALI's CUDA 13 wheel, {DALI_WHEEL}, is over the 64 MiB a device check carries"


def prepare_gpu(ctx: CaseContext, case: Case) -> Workload:
    """The workload of one gpu case (its ``part`` parameter says which)."""
    params = dict(case.params)
    why = cuda_missing(params["device"])
    if why:
        raise Skip(why)
    part = params["part"]
    if part in ("h2d", "h2d-ceiling"):
        return _copy_workload(params)
    from imgbench.loaders.gpu.ops import NoGpuDecoderError

    if part == "decode":
        try:
            return _decode_workload(ctx, params)
        except NoGpuDecoderError as exc:
            raise Skip(str(exc)) from None
    if part == "augment":
        return _augment_workload(ctx, params)
    if part == "step":
        return _step_workload(params)
    if part == "feed":
        from imgbench.loaders.gpu.fed import prepare_feed

        try:
            return prepare_feed(ctx, case)
        except NoGpuDecoderError as exc:
            raise Skip(str(exc)) from None
    raise ValueError(f"gpu case {case.variant}: unknown part {part!r}")


def _device_extra(device: Any) -> dict[str, Any]:
    import torch

    from imgbench.loaders.gpu.device import device_name

    return {"device": device_name(device), "torch_cuda": torch.version.cuda}


def _copy_workload(params: dict[str, Any]) -> Workload:
    import torch

    from imgbench.loaders.gpu.device import synchronize

    device = torch.device(params["device"])
    n = int(params["batches_per_round"])
    if params["part"] == "h2d-ceiling":
        host = torch.empty(int(params["bytes"]), dtype=torch.uint8)
        pinned, non_blocking, images = True, True, 1
    else:
        dtype = getattr(torch, params["dtype"])
        images = int(params["batch_size"])
        host = torch.randint(0, 256, (images, 3, SIDE, SIDE), dtype=torch.uint8).to(dtype)
        pinned, non_blocking = bool(params["pinned"]), bool(params["non_blocking"])
    pinned = pinned and device.type == "cuda"  # no pinning without CUDA (the tests' CPU device)
    if pinned:
        host = host.pin_memory()
    target = torch.empty_like(host, device=device)

    def copy(_item: object) -> None:
        target.copy_(host, non_blocking=non_blocking)
        synchronize(device)

    copy(None)
    if not torch.equal(target.flatten()[:4096].cpu(), host.flatten()[:4096]):
        raise RuntimeError("the copy on the device differs from the host's bytes")
    size = host.numel() * host.element_size()
    return Workload(
        items=list(range(n)),
        fn=copy,
        images_per_item=images,
        bytes_per_round=n * size,
        cache_method="n/a: a tensor in host memory",
        extra={
            "bytes_per_copy": size,
            "pinned": pinned,
            "non_blocking": non_blocking,
            "unit": "images_per_s: batches of 3x224x224; mb_per_s_median: the copy's rate"
            if images > 1
            else "one 256 MiB copy per item: mb_per_s_median is the ceiling",
            **_device_extra(device),
        },
    )


def _decode_workload(ctx: CaseContext, params: dict[str, Any]) -> Workload:
    import torch

    from imgbench.loaders.gpu.device import synchronize
    from imgbench.loaders.gpu.ops import GpuDecoder, decode_batch, jpeg_batch

    device = torch.device(params["device"])
    batch = int(params["batch_size"])
    encoded = jpeg_batch(ctx, batch)
    close: Callable[[], None] | None = None
    if device.type == "cuda":
        torch.cuda.init()  # torch's CUDA first, then the decoder's library
    if params["decode"] != "cpu-threads":
        decoder = GpuDecoder(
            params["decode"], device, batch, int(params.get("decode_threads") or 1)
        )
        close = decoder.close

        def decode(_item: object) -> list[Any]:
            out = decoder(encoded)
            synchronize(device)
            return out

    else:
        from concurrent.futures import ThreadPoolExecutor

        threads = int(params["decode_threads"])
        pool = ThreadPoolExecutor(threads)
        close = pool.shutdown
        chunks = [c for c in (encoded[i::threads] for i in range(threads)) if c]
        cpu = torch.device("cpu")

        def decode(_item: object) -> list[Any]:
            parts = pool.map(lambda chunk: decode_batch(chunk, cpu), chunks)
            return [im for part in parts for im in part]

    out = decode(None)  # the first call loads the codec; the shapes are checked once
    if len(out) != batch or any(im.ndim != 3 or im.shape[0] != 3 for im in out[:8]):
        shapes = [tuple(im.shape) for im in out[:4]]
        raise RuntimeError(f"decoded {len(out)} images {shapes}..., expected {batch} of 3xHxW")
    if params["decode"] != "cpu-threads" and out[0].device.type != device.type:
        raise RuntimeError(f"decoded onto {out[0].device}, expected {device}")
    n = int(params["batches_per_round"])
    return Workload(
        items=list(range(n)),
        fn=decode,
        images_per_item=batch,
        bytes_per_round=n * sum(int(t.numel()) for t in encoded),
        cache_method="n/a: the encoded bytes in host memory",
        extra={"decode": params["decode"], **_device_extra(device)},
        close=close,
    )


def _augment_workload(ctx: CaseContext, params: dict[str, Any]) -> Workload:
    import torch

    from imgbench.loaders.gpu.device import synchronize
    from imgbench.loaders.gpu.ops import GpuAugment, decode_batch, jpeg_batch

    device = torch.device(params["device"])
    batch = int(params["batch_size"])
    images = [im.to(device) for im in decode_batch(jpeg_batch(ctx, batch), "cpu")]
    augment = GpuAugment(params["per"], params.get("augment_library", "v2"))

    def run(_item: object) -> None:
        augment(images)
        synchronize(device)

    out = augment(images)
    if tuple(out.shape) != (batch, 3, SIDE, SIDE) or out.dtype != torch.uint8:
        raise RuntimeError(f"augmented batch {tuple(out.shape)} {out.dtype}, expected uint8")
    n = int(params["batches_per_round"])
    return Workload(
        items=list(range(n)),
        fn=run,
        images_per_item=batch,
        megapixels_per_round=n * batch * SIDE * SIDE / 1e6,
        cache_method="n/a: decoded images already on the device",
        extra={
            "per": params["per"],
            "augment_library": params.get("augment_library", "v2"),
            **_device_extra(device),
        },
    )


def _step_workload(params: dict[str, Any]) -> Workload:
    import torch

    from imgbench.loaders.gpu.device import synchronize
    from imgbench.loaders.gpu.step import MODEL_KIND, step_and_batch

    device = torch.device(params["device"])
    batch = int(params["batch_size"])
    step, images, labels = step_and_batch(params, SIDE)
    problem = step.check(images, labels)
    if problem:
        raise RuntimeError(f"{params['model']}: {problem}")

    def run(_item: object) -> None:
        step(images, labels)
        synchronize(device)

    start = time.perf_counter()
    run(None)  # cuDNN picks its kernels on the first steps
    n = int(params["batches_per_round"])
    return Workload(
        items=list(range(n)),
        fn=run,
        images_per_item=batch,
        cache_method="n/a: one batch kept on the device",
        extra={
            "model": params["model"],
            "step_kind": MODEL_KIND,
            "first_step_s": time.perf_counter() - start,
            **_device_extra(device),
        },
    )
