"""Kornia augmentations on float tensors in [0, 1]: one image (3xHxW) at a time, or batches.

Kornia works on float tensors, so per-transform cases take 3xHxW float32 input prepared outside
the timing (its native form). Pipelines start from uint8 tensors like torchvision's and convert
inside the timing. Batches draw random parameters per image (``same_on_batch=False``).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import kornia
import kornia.augmentation as K  # noqa: N812 (the library's own convention)
import numpy as np
import torch

from imgbench.augment import spec, tasks
from imgbench.augment.base import IMAGENET_MEAN, IMAGENET_STD, InputKind, Layout, Op, OutputKind

LIBRARY = "kornia"

_MEAN = torch.tensor(IMAGENET_MEAN)
_STD = torch.tensor(IMAGENET_STD)


def _jitter(b: float = 1.0, c: float = 1.0, s: float = 1.0, h: float = 0.0) -> K.ColorJitter:
    return K.ColorJitter(
        brightness=(b, b), contrast=(c, c), saturation=(s, s), hue=(h, h), p=1.0, keepdim=True
    )


_SHEAR = (spec.AFFINE_SHEAR_DEG, spec.AFFINE_SHEAR_DEG, 0.0, 0.0)  # x_min, x_max, y_min, y_max

_IMAGE_TRANSFORMS: dict[str, Callable[[], Any]] = {
    "hflip": lambda: K.RandomHorizontalFlip(p=1.0, keepdim=True),
    "vflip": lambda: K.RandomVerticalFlip(p=1.0, keepdim=True),
    "rotate90": lambda: K.RandomRotation90(times=(1, 1), p=1.0, keepdim=True),
    "rotate": lambda: K.RandomRotation(
        degrees=(spec.ROTATE_DEG, spec.ROTATE_DEG), p=1.0, keepdim=True
    ),
    "affine": lambda: K.RandomAffine(
        degrees=(spec.AFFINE_DEG, spec.AFFINE_DEG),
        scale=(spec.AFFINE_SCALE, spec.AFFINE_SCALE),
        shear=_SHEAR,  # type: ignore[arg-type]  # kornia takes 4 values; its hint says 2
        p=1.0,
        keepdim=True,
    ),
    "perspective": lambda: K.RandomPerspective(
        distortion_scale=spec.PERSPECTIVE_DISTORTION, p=1.0, keepdim=True
    ),
    "resize": lambda: K.Resize((spec.SIZE, spec.SIZE), antialias=True, keepdim=True),
    "random_resized_crop": lambda: K.RandomResizedCrop(
        (spec.SIZE, spec.SIZE), scale=spec.RRC_SCALE, ratio=spec.RRC_RATIO, keepdim=True
    ),
    "center_crop": lambda: K.CenterCrop(spec.SIZE, keepdim=True),
    "random_crop": lambda: K.RandomCrop((spec.SIZE, spec.SIZE), keepdim=True),
    "brightness": lambda: _jitter(b=spec.BRIGHTNESS),
    "contrast": lambda: _jitter(c=spec.CONTRAST),
    "saturation": lambda: _jitter(s=spec.SATURATION),
    "hue": lambda: _jitter(h=spec.HUE),
    "color_jitter": lambda: K.ColorJitter(*spec.JITTER, p=1.0, keepdim=True),
    "grayscale": lambda: K.RandomGrayscale(p=1.0, keepdim=True),
    "gaussian_blur": lambda: K.RandomGaussianBlur(
        (spec.BLUR_KERNEL, spec.BLUR_KERNEL),
        (spec.BLUR_SIGMA, spec.BLUR_SIGMA),
        p=1.0,
        keepdim=True,
    ),
    "median_blur": lambda: K.RandomMedianBlur(
        (spec.MEDIAN_KERNEL, spec.MEDIAN_KERNEL), p=1.0, keepdim=True
    ),
    "sharpen": lambda: K.RandomSharpness(
        sharpness=(spec.SHARPNESS, spec.SHARPNESS), p=1.0, keepdim=True
    ),
    "equalize": lambda: K.RandomEqualize(p=1.0, keepdim=True),
    "posterize": lambda: K.RandomPosterize(
        bits=(spec.POSTERIZE_BITS, spec.POSTERIZE_BITS), p=1.0, keepdim=True
    ),
    # thresholds=0.0 means exactly 0.5: 128/255 is inverted, 127/255 is kept, as threshold 128
    "solarize": lambda: K.RandomSolarize(thresholds=0.0, additions=0.0, p=1.0, keepdim=True),
    "invert": lambda: K.RandomInvert(p=1.0, keepdim=True),
    "random_erasing": lambda: K.RandomErasing(
        scale=spec.ERASE_SCALE, ratio=spec.ERASE_RATIO, value=0.0, p=1.0, keepdim=True
    ),
    "elastic": lambda: K.RandomElasticTransform(
        kernel_size=(41, 41),
        sigma=(spec.ELASTIC_SIGMA, spec.ELASTIC_SIGMA),
        alpha=(1.0, 1.0),
        p=1.0,
        keepdim=True,
    ),
    "jpeg": lambda: K.RandomJPEG(
        jpeg_quality=(float(spec.JPEG_QUALITY), float(spec.JPEG_QUALITY)), p=1.0, keepdim=True
    ),
}


def _run(transform: Any, input_kind: InputKind, output: OutputKind = "unit") -> Op:
    layout: Layout = "bchw" if input_kind.startswith("b") else "chw"

    def run(image: torch.Tensor) -> torch.Tensor:
        return transform(image).contiguous()

    return Op(run, input_kind, output, layout)


def _to_tensor() -> Op:
    def run(image: np.ndarray) -> torch.Tensor:
        return kornia.image_to_tensor(image, keepdim=True).float().div_(255.0).contiguous()

    return Op(run, "hwc-uint8", "unit", "chw")


def transforms(input_kind: InputKind = "chw-float-tensor") -> dict[str, Callable[[], Op]]:

    def on(make: Callable[[], Any]) -> Callable[[], Op]:
        return lambda: _run(make(), input_kind)

    built = {name: on(make) for name, make in _IMAGE_TRANSFORMS.items()}
    built["normalize"] = lambda: _run(
        K.Normalize(mean=_MEAN, std=_STD, keepdim=True), input_kind, "norm"
    )
    built["to_tensor"] = _to_tensor
    return built


def _train() -> list[Any]:
    return [
        K.RandomResizedCrop((spec.SIZE, spec.SIZE), scale=spec.RRC_SCALE, ratio=spec.RRC_RATIO),
        K.RandomHorizontalFlip(p=spec.FLIP_P),
        K.ColorJitter(*spec.JITTER, p=1.0),
    ]


PIPELINE_STEPS: dict[str, Callable[[], list[Any]]] = {
    "train-classification": lambda: [*_train(), K.Normalize(mean=_MEAN, std=_STD)],
    "train-uint8": _train,  # Kornia works on floats: back to uint8 at the end, inside the timing
    "light": lambda: [
        K.SmallestMaxSize(spec.RESIZE_SHORT),
        K.CenterCrop(spec.SIZE),
        K.Normalize(mean=_MEAN, std=_STD),
    ],
    "heavy": lambda: [
        *_train(),
        K.RandomRotation(spec.HEAVY_ROTATE_DEG, p=1.0),
        K.RandomGaussianBlur((spec.BLUR_KERNEL, spec.BLUR_KERNEL), spec.HEAVY_BLUR_SIGMA, p=1.0),
        K.Normalize(mean=_MEAN, std=_STD),
        K.RandomErasing(
            scale=spec.ERASE_SCALE, ratio=spec.ERASE_RATIO, value=0.0, p=spec.HEAVY_ERASE_P
        ),
    ],
}


def pipelines(input_kind: InputKind = "chw-uint8-tensor") -> dict[str, Callable[[], Op]]:
    """uint8 tensors in (one image or a batch), normalised float out (uint8 for train-uint8);
    conversions are timed."""
    batched = input_kind.startswith("b")
    layout: Layout = "bchw" if batched else "chw"

    def build(name: str) -> Op:
        sequence = K.AugmentationSequential(*PIPELINE_STEPS[name](), keepdim=not batched)

        def run(image: torch.Tensor) -> torch.Tensor:
            return sequence(image.float().div_(255.0)).contiguous()

        if name != "train-uint8":
            return Op(run, input_kind, "norm", layout)

        def run_uint8(image: torch.Tensor) -> torch.Tensor:
            return run(image).mul_(255.0).round_().clamp_(0, 255).to(torch.uint8)

        return Op(run_uint8, input_kind, "u8", layout)

    return {name: partial(build, name) for name in PIPELINE_STEPS}


# tasks beyond classification (augment/tasks.py): AugmentationSequential with data_keys
# ["input", "mask"]; masks are resampled with nearest and skip the intensity steps


def _seg_result(image: torch.Tensor, mask: torch.Tensor) -> Any:
    image = (image - _MEAN[:, None, None]) / _STD[:, None, None]
    classes = mask.reshape(mask.shape[-2:]).round().to(torch.int64)
    onehot = torch.zeros((tasks.N_CLASSES, *classes.shape), dtype=torch.float32)
    onehot.scatter_(0, classes.unsqueeze(0), 1.0)
    return image.reshape(image.shape[-3:]).contiguous(), classes, onehot


def _segmentation() -> tasks.TaskOp:
    sequence = K.AugmentationSequential(*_train(), data_keys=["input", "mask"])

    def run(sample: tuple[torch.Tensor, torch.Tensor]) -> Any:
        image, mask = sample
        out_image, out_mask = sequence(image.float().div_(255.0)[None], mask.float()[None, None])
        return _seg_result(out_image, out_mask)

    def pinned(sample: tuple[torch.Tensor, torch.Tensor], g: tasks.Geometry) -> Any:
        """The slice-and-resize RandomResizedCrop does (cropping_mode='slice'), pinned."""
        from kornia.geometry.transform import hflip, resize

        image, mask = sample
        window = (..., slice(g.top, g.top + g.height), slice(g.left, g.left + g.width))
        size = (tasks.SEG_SIZE, tasks.SEG_SIZE)
        out_image = resize(image.float().div(255.0)[None][window], size, antialias=True)
        out_mask = resize(mask.float()[None, None][window], size, interpolation="nearest")
        if g.flip:
            out_image, out_mask = hflip(out_image), hflip(out_mask)
        return _seg_result(out_image, out_mask)

    return tasks.TaskOp(run, "torch", pinned)


def task_recipes(input_kind: InputKind) -> dict[str, Callable[[], tasks.TaskOp]]:
    return {"segmentation": _segmentation}
