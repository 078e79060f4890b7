"""GPU decode and augmentation: batched nvJPEG and the train recipe in torchvision v2, applied
to tensors on any device (CUDA on the device machine, the CPU in the tests)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, Literal

from imgbench.augment import spec
from imgbench.loaders.base import Batch

Per = Literal["image", "batch"]


def decode_batch(encoded: Sequence[Any], device: Any) -> list[Any]:
    """JPEG bytes (1-D uint8 CPU tensors) -> 3 x H x W uint8 tensors on ``device``: one call
    over the whole list, which on CUDA is torchvision's batched nvJPEG decode (the bytes' copy
    to the device included)."""
    import torch
    from torchvision.io import ImageReadMode, decode_jpeg

    dev = torch.device(device)
    images = decode_jpeg(list(encoded), mode=ImageReadMode.RGB, device=dev)
    return list(images)


def encoded_tensor(data: bytes) -> Any:
    """A file's bytes as the 1-D uint8 tensor ``decode_jpeg`` takes (a copy: writable)."""
    import torch

    return torch.frombuffer(bytearray(data), dtype=torch.uint8)


class GpuAugment:
    """The train recipe (RandomResizedCrop 224, horizontal flip, ColorJitter) in torchvision v2
    on tensors where they are. ``per="image"``: the whole recipe on each image; ``per="batch"``:
    the crop on each image (their sizes differ), then flip and ColorJitter once on the stacked
    batch (one random draw for the batch, as v2 does with a batched tensor). Out: a uint8
    N x 3 x 224 x 224 batch (the feed normalises it)."""

    def __init__(self, per: Per) -> None:
        import torch
        from torchvision.transforms import v2

        self.per = per
        crop = v2.RandomResizedCrop(
            spec.SIZE, scale=spec.RRC_SCALE, ratio=spec.RRC_RATIO, antialias=True
        )
        colour = [v2.RandomHorizontalFlip(p=spec.FLIP_P), v2.ColorJitter(*spec.JITTER)]
        self.crop = crop
        self.image = v2.Compose([crop, *colour])
        self.batch = v2.Compose(colour)
        self._stack = torch.stack

    def __call__(self, images: Sequence[Any]) -> Any:
        if self.per == "image":
            return self._stack([self.image(im) for im in images])
        return self.batch(self._stack([self.crop(im) for im in images]))


class BytesDataset:
    """Each sample is the file's encoded bytes and its label: the loader's workers only read;
    decoding is left to the device (nvJPEG)."""

    def __init__(self, source: Any) -> None:
        self.source = source
        self.labels = getattr(source, "labels", None)

    def __len__(self) -> int:
        return len(self.source)

    def __getitem__(self, index: int) -> tuple[Any, int, tuple[float, float, float]]:
        start = time.perf_counter()
        data, label = self.source[index]
        return encoded_tensor(data), int(label), (time.perf_counter() - start, 0.0, 0.0)


def collate_bytes(samples: list[tuple[Any, int, tuple[float, float, float]]]) -> Batch:
    """A list of encoded tensors (any length) with the labels and the read times."""
    import torch

    start = time.perf_counter()
    labels = torch.tensor([s[1] for s in samples], dtype=torch.int64)
    stage_s = torch.tensor([s[2] for s in samples], dtype=torch.float64)
    return [s[0] for s in samples], labels, stage_s, time.perf_counter() - start
