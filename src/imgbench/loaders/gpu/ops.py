"""GPU decode and augmentation on tensors on any device (CUDA on the device machine, the CPU in
the tests): batched nvJPEG (torchvision), nvImageCodec and DALI's ``mixed`` decoder, and the
train recipe in torchvision v2 or kornia."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal

from imgbench.augment import spec
from imgbench.loaders.base import Batch
from imgbench.measure.errors import Skip

if TYPE_CHECKING:
    from imgbench.measure.context import CaseContext

Per = Literal["image", "batch"]
AugmentLibrary = Literal["v2", "kornia"]


def decode_batch(encoded: Sequence[Any], device: Any) -> list[Any]:
    """JPEG bytes (1-D uint8 CPU tensors) -> 3 x H x W uint8 tensors on ``device``: one call
    over the whole list, which on CUDA is torchvision's batched nvJPEG decode (the bytes' copy
    to the device included)."""
    import torch
    from torchvision.io import ImageReadMode, decode_jpeg

    dev = torch.device(device)
    images = decode_jpeg(list(encoded), mode=ImageReadMode.RGB, device=dev)
    return list(images)


def jpeg_batch(ctx: CaseContext, count: int) -> list[Any]:
    """``count`` of the dataset's JPEG files as encoded tensors (cycling through them)."""
    entries = [e for e in ctx.entries() if e.codec == "jpeg"]
    if not entries:
        raise Skip(f"dataset {ctx.dataset.name} has no JPEG images")
    return [encoded_tensor(ctx.path(entries[i % len(entries)]).read_bytes()) for i in range(count)]


def encoded_tensor(data: bytes) -> Any:
    """A file's bytes as the 1-D uint8 tensor ``decode_jpeg`` takes (a copy: writable)."""
    import torch

    return torch.frombuffer(bytearray(data), dtype=torch.uint8)


class GpuAugment:
    """The train recipe (RandomResizedCrop 224, horizontal flip, ColorJitter) on tensors where
    they are, in torchvision v2 or kornia. ``per="image"``: the whole recipe on each image;
    ``per="batch"``: the crop on each image (their sizes differ), then flip and ColorJitter once
    on the stacked batch (v2: one random draw for the batch, as v2 does with a batched tensor;
    kornia: a draw per image, ``same_on_batch=False``). Out: a uint8 N x 3 x 224 x 224 batch
    (the feed normalises it); kornia works on floats in [0, 1], so its rows convert to float and
    back to uint8 inside the timing, as its ``train-uint8`` pipeline does."""

    def __init__(self, per: Per, library: AugmentLibrary = "v2") -> None:
        self.per = per
        self.library = library
        self.crop: Callable[[Any], Any]
        self.image: Callable[[Any], Any]
        self.batch: Callable[[Any], Any]
        if library == "kornia":
            self._kornia()
        else:
            self._v2()

    def _v2(self) -> None:
        from torchvision.transforms import v2

        crop = v2.RandomResizedCrop(
            spec.SIZE, scale=spec.RRC_SCALE, ratio=spec.RRC_RATIO, antialias=True
        )
        colour = [v2.RandomHorizontalFlip(p=spec.FLIP_P), v2.ColorJitter(*spec.JITTER)]
        self.crop = crop
        self.image = v2.Compose([crop, *colour])
        self.batch = v2.Compose(colour)

    def _kornia(self) -> None:
        import kornia.augmentation as K  # noqa: N812 (the library's own convention)

        crop = K.RandomResizedCrop(
            (spec.SIZE, spec.SIZE), scale=spec.RRC_SCALE, ratio=spec.RRC_RATIO
        )
        colour = [K.RandomHorizontalFlip(p=spec.FLIP_P), K.ColorJitter(*spec.JITTER, p=1.0)]
        image = K.AugmentationSequential(crop, *colour)
        batch = K.AugmentationSequential(*colour)
        self.crop = lambda im: crop(_unit(im))
        self.image = lambda im: image(_unit(im))
        self.batch = lambda images: _uint8(batch(images))

    def __call__(self, images: Sequence[Any]) -> Any:
        import torch

        if self.library == "kornia":  # 1 x 3 x H x W floats per image
            if self.per == "image":
                return _uint8(torch.cat([self.image(im) for im in images]))
            return self.batch(torch.cat([self.crop(im) for im in images]))
        if self.per == "image":
            return torch.stack([self.image(im) for im in images])
        return self.batch(torch.stack([self.crop(im) for im in images]))


def _unit(image: Any) -> Any:
    """A uint8 3 x H x W image as kornia takes it: 1 x 3 x H x W float in [0, 1]."""
    return image.float().div_(255.0).unsqueeze(0)


def _uint8(images: Any) -> Any:
    import torch

    return images.mul_(255.0).round_().clamp_(0, 255).to(torch.uint8)


class GpuDecoder:
    """JPEG bytes (1-D uint8 CPU tensors) -> 3 x H x W uint8 tensors on ``device``, one call per
    batch: ``nvjpeg`` (torchvision's batched ``decode_jpeg``), ``nvimgcodec`` (nvImageCodec's
    ``Decoder.decode`` on a list; its CPU-only back-end on a CPU device), or ``dali``
    (``fn.decoders.image`` with ``device="mixed"`` in a pipeline of one batch; ``"cpu"`` on a
    CPU device). Built outside the timing; the bytes' copy to the device is inside each call."""

    def __init__(self, kind: str, device: Any, batch_size: int = 1, threads: int = 1) -> None:
        import torch

        self.kind = kind
        self.device = torch.device(device)
        self._decode: Any
        if kind == "nvjpeg":
            self._decode = functools.partial(decode_batch, device=self.device)
        elif kind == "nvimgcodec":
            self._decode = NvimgcodecDecode(self.device, threads)
        elif kind == "dali":
            self._decode = DaliDecode(self.device, batch_size, threads)
        else:
            raise ValueError(f"unknown GPU decoder {kind!r}: nvjpeg, nvimgcodec or dali")

    def __call__(self, encoded: Sequence[Any]) -> list[Any]:
        return list(self._decode(encoded))

    def close(self) -> None:
        close = getattr(self._decode, "close", None)
        if close is not None:
            close()


class NvimgcodecDecode:
    """nvImageCodec: one ``Decoder.decode`` call over the batch. On CUDA the default decoder
    (nvJPEG on the GPU, its hardware decoder where the GPU has one), ordered on torch's current
    stream; each image becomes a tensor through ``__cuda_array_interface__`` (no copy). A
    decoder that gives host images on CUDA has no GPU back-end here (nvJPEG not found): the case
    skips with that reason. On the CPU: its CPU-only back-end (libjpeg-turbo)."""

    def __init__(self, device: Any, threads: int = 1) -> None:
        import nvidia.nvimgcodec as nvimgcodec
        import torch

        self.device = torch.device(device)
        self.cuda = self.device.type == "cuda"
        self._nv = nvimgcodec
        if self.cuda:
            self.decoder = nvimgcodec.Decoder(device_id=self.device.index or 0)
        else:
            self.decoder = nvimgcodec.Decoder(
                device_id=nvimgcodec.NVIMGCODEC_DEVICE_CPU_ONLY,
                max_num_cpu_threads=threads,
                backends=[nvimgcodec.Backend(nvimgcodec.BackendKind.CPU_ONLY)],
            )
        self.params = nvimgcodec.DecodeParams(
            color_spec=nvimgcodec.ColorSpec.SRGB,
            allow_any_depth=False,
            apply_exif_orientation=False,
        )

    def __call__(self, encoded: Sequence[Any]) -> list[Any]:
        import torch

        data = [t.numpy() for t in encoded]
        if self.cuda:
            stream = torch.cuda.current_stream(self.device).cuda_stream
            images = self.decoder.decode(data, params=self.params, cuda_stream=stream)
        else:
            images = self.decoder.decode(data, params=self.params)
        out = []
        for i, image in enumerate(images):
            if image is None:
                raise ValueError(f"nvImageCodec could not decode item {i} of the batch")
            out.append(self._tensor(image))
        return out

    def _tensor(self, image: Any) -> Any:
        import numpy as np
        import torch

        if self.cuda:
            if image.buffer_kind != self._nv.ImageBufferKind.STRIDED_DEVICE:
                raise NoGpuDecoderError(
                    "nvImageCodec decoded on the host: no GPU back-end loaded (is nvJPEG for "
                    f"CUDA {torch.version.cuda} installed?)"
                )
            return torch.as_tensor(image, device=self.device).permute(2, 0, 1)
        return torch.from_numpy(np.ascontiguousarray(np.asarray(image))).permute(2, 0, 1)


class NoGpuDecoderError(RuntimeError):
    """The decoder runs, but not on the GPU: the case skips with this reason."""


class DaliDecode:
    """DALI's ``fn.decoders.image`` over one batch fed through ``fn.external_source``:
    ``device="mixed"`` (nvJPEG, the bytes copied by DALI) on CUDA, ``"cpu"`` on a CPU device; the
    simple synchronous executor (one ``run()`` decodes what was just fed); each output image
    copied into a torch tensor on the device (3 x H x W) inside the call."""

    def __init__(self, device: Any, batch_size: int, threads: int = 1) -> None:
        import torch
        from nvidia.dali import fn, types
        from nvidia.dali.pipeline import Pipeline
        from nvidia.dali.plugin.pytorch.torch_utils import to_torch_tensor

        self.device = torch.device(device)
        cuda = self.device.type == "cuda"
        self.batch_size = batch_size
        self._to_torch = to_torch_tensor
        self.pipe = Pipeline(
            batch_size=batch_size,
            num_threads=max(1, threads),
            device_id=(self.device.index or 0) if cuda else None,
            exec_async=False,
            exec_pipelined=False,
            prefetch_queue_depth=1,
        )
        with self.pipe:
            encoded = fn.external_source(name="encoded", dtype=types.DALIDataType.UINT8, ndim=1)
            self.pipe.set_outputs(
                fn.decoders.image(
                    encoded,
                    device="mixed" if cuda else "cpu",
                    output_type=types.DALIImageType.RGB,
                    adjust_orientation=False,
                )
            )
        self.pipe.build()

    def __call__(self, encoded: Sequence[Any]) -> list[Any]:
        if len(encoded) != self.batch_size:
            raise ValueError(f"DALI's pipeline takes {self.batch_size} images, got {len(encoded)}")
        self.pipe.feed_input("encoded", [t.numpy() for t in encoded])
        (out,) = self.pipe.run()
        return [
            self._to_torch(out[i], copy=True).to(self.device).permute(2, 0, 1)
            for i in range(len(encoded))
        ]

    def close(self) -> None:
        self.pipe._shutdown()


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
