"""Batches handed to a device: the copy, the side-stream prefetcher, GPU decode and augmentation.

A :class:`DeviceFeed` wraps a CPU loader (``imgbench.loaders.base.Loader``) and yields its
batches on ``device``, as a training loop receives them: copied (from pinned memory with
``non_blocking=True``, or from pageable memory, blocking), normalised on the device when they
arrive as uint8, decoded there (nvJPEG) when they arrive as encoded bytes, augmented there when
they arrive as decoded images. The copy, decode and augmentation are inside what the harness
times. Every class takes ``device``, so the same logic runs on CPU tensors in the tests.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Literal

from imgbench.augment.base import IMAGENET_MEAN, IMAGENET_STD
from imgbench.loaders.base import Batch, Loader

Transfer = Literal["pinned-nonblocking", "pageable-blocking", "prefetcher"]
TRANSFERS: tuple[Transfer, ...] = ("pinned-nonblocking", "pageable-blocking", "prefetcher")


def normalise(images: Any) -> Any:
    """uint8 N x 3 x H x W (on any device) -> float32, scaled to [0, 1], ImageNet-normalised."""
    import torch

    mean = torch.tensor(IMAGENET_MEAN, device=images.device).view(1, 3, 1, 1) * 255
    std = torch.tensor(IMAGENET_STD, device=images.device).view(1, 3, 1, 1) * 255
    return images.float().sub_(mean).div_(std)


def to_device(batch: Batch, device: Any, non_blocking: bool) -> Batch:
    """The batch's images and labels on ``device``; a list of images (the decode-only pipeline's
    H x W x 3 arrays) is copied image by image, as 3 x H x W tensors."""
    images, labels = batch[0], batch[1]
    if isinstance(images, list | tuple):
        images = [_chw(im).to(device, non_blocking=non_blocking) for im in images]
    else:
        images = images.to(device, non_blocking=non_blocking)
    return images, labels.to(device, non_blocking=non_blocking), batch[2], batch[3]


def _chw(image: Any) -> Any:
    """A decoded image as a 3 x H x W tensor: NumPy arrays are H x W x 3 (the decoders' layout),
    tensors are 3 x H x W already (torchvision's)."""
    import torch

    if isinstance(image, torch.Tensor):
        return image
    return torch.from_numpy(image).permute(2, 0, 1)


class SideStreamPrefetcher:
    """Apex's ``data_prefetcher``: while the step uses batch n, batch n + 1 is already being
    copied (uint8) and normalised on a second CUDA stream. ``next`` makes the compute stream wait
    for that copy and marks the tensors as used there, so the allocator does not reuse their
    memory early. On the CPU (the tests) there is no stream: the same steps run in order."""

    def __init__(self, batches: Iterator[Batch], device: Any) -> None:
        import torch

        self.batches = batches
        self.device = torch.device(device)
        cuda = self.device.type == "cuda"
        self.stream = torch.cuda.Stream(self.device) if cuda else None
        self._next: Batch | None = None
        self._preload()

    def _preload(self) -> None:
        import contextlib

        import torch

        batch = next(self.batches)
        context = torch.cuda.stream(self.stream) if self.stream else contextlib.nullcontext()
        with context:
            images, labels, stage_s, collate_s = to_device(batch, self.device, non_blocking=True)
            self._next = (normalise(images), labels, stage_s, collate_s)

    def __iter__(self) -> Iterator[Batch]:
        return self

    def __next__(self) -> Batch:
        import torch

        batch = self._next
        assert batch is not None
        if self.stream is not None:
            current = torch.cuda.current_stream(self.device)
            current.wait_stream(self.stream)
            batch[0].record_stream(current)
            batch[1].record_stream(current)
        self._preload()
        return batch


class DeviceFeed:
    """A loader whose batches arrive on ``device``: ``transfer`` says how they are copied;
    ``decode`` turns a batch of encoded bytes into images there (nvJPEG on CUDA); ``augment``
    turns a list of decoded images into one uint8 batch there; uint8 batches are normalised.
    ``sync``: wait for each batch's device work before handing it over (the ``+copy`` rows, which
    have no step to wait on: without it the CPU would queue copies ahead of the device).

    Stage times per batch (``extra["feed_stage_ms_median"]``): ``wait``, the wait for the CPU
    loader's next batch (its workers' reads, decode, augmentation); with ``sync`` also the
    device's parts, each waited for: ``copy`` (or ``decode``: the decoder copies the bytes
    itself), ``augment``, ``normalise``. They tell what bounds a feed: the workers or the device."""

    def __init__(
        self,
        loader: Loader,
        device: Any,
        transfer: Transfer,
        *,
        decode: Callable[[list[Any]], list[Any]] | None = None,
        augment: Callable[[list[Any]], Any] | None = None,
        sync: bool = False,
    ) -> None:
        self.loader = loader
        self.device = device
        self.transfer = transfer
        self.decode = decode
        self.augment = augment
        self.sync = sync
        self.last: Batch | None = None  # the batch the training step takes next
        self.pipeline = getattr(loader, "pipeline", None)  # LoaderRun closes it
        self.stages: dict[str, list[float]] = {}

    @property
    def extra(self) -> dict[str, Any]:
        """What LoaderRun merges into the row: what the CPU loader recorded, and the median of each
        stage's time per batch."""
        import statistics

        own = dict(getattr(self.loader, "extra", None) or {})
        if not self.stages:
            return own
        return {
            **own,
            "feed_stage_ms_median": {
                name: round(1e3 * statistics.median(times), 3)
                for name, times in self.stages.items()
                if times
            },
            "feed_stage_batches": max(len(times) for times in self.stages.values()),
            "feed_stage_method": "perf_counter around each part"
            + (
                ", the device waited for after each" if self.sync else "; the device not waited for"
            ),
        }

    def _time(self, name: str, start: float) -> float:
        """Record ``name``'s time since ``start`` (after the device's work, with ``sync``)."""
        import time

        if self.sync:
            from imgbench.loaders.gpu.device import synchronize_stream

            synchronize_stream(self.device)
        now = time.perf_counter()
        self.stages.setdefault(name, []).append(now - start)
        return now

    def batches(self) -> Iterator[Batch]:
        import time

        source: Iterator[Batch] = self.loader.batches()
        if self.transfer == "prefetcher":
            source = SideStreamPrefetcher(source, self.device)
        while True:
            start = time.perf_counter()
            try:
                batch = next(source)
            except StopIteration:
                return
            self.stages.setdefault("wait", []).append(time.perf_counter() - start)
            if self.transfer != "prefetcher":
                batch = self._arrive(batch)
            if self.sync:
                from imgbench.loaders.gpu.device import synchronize_stream

                synchronize_stream(self.device)
            self.last = batch
            yield batch

    def _arrive(self, batch: Batch) -> Batch:
        import time

        non_blocking = self.transfer == "pinned-nonblocking"
        images: Any
        start = time.perf_counter()
        if self.decode is not None:  # encoded bytes: the decoder copies them itself
            images = self.decode(batch[0])
            labels = batch[1].to(self.device, non_blocking=non_blocking)
            start = self._time("decode", start)
        else:
            images, labels, _, _ = to_device(batch, self.device, non_blocking)
            start = self._time("copy", start)
        if self.augment is not None:
            images = self.augment(images)
            start = self._time("augment", start)
        if images.dtype != _float32():
            images = normalise(images)
            self._time("normalise", start)
        return images, labels, batch[2], batch[3]

    def worker_pids(self) -> list[int]:
        return self.loader.worker_pids()

    def close(self) -> None:
        self.loader.close()


def _float32() -> Any:
    import torch

    return torch.float32
