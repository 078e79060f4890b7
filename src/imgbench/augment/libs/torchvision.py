"""torchvision.transforms.v2, on uint8 CHW tensors and on PIL images, with the same objects.

One v2 transform serves both inputs: v2 dispatches on the input type, so the PIL variant runs
Pillow kernels and the tensor variant torch kernels. Batched tensors (BxCxHxW) go through the
same objects; v2 draws one set of random parameters per call, so a whole batch gets the same
crop, flip and jitter (Kornia draws per image).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np
import torch
from torchvision import tv_tensors
from torchvision.transforms import v2

from imgbench.augment import spec, tasks
from imgbench.augment.base import (
    IMAGENET_MEAN,
    IMAGENET_STD,
    InputKind,
    Layout,
    Op,
    OutputKind,
)

LIBRARY = "torchvision"
BILINEAR = v2.InterpolationMode.BILINEAR


def _to_float() -> v2.Transform:
    return v2.ToDtype(torch.float32, scale=True)


def _run_on(transform: Callable[[Any], Any], input_kind: InputKind) -> Op:
    """Tensor in, contiguous tensor out; PIL in, contiguous array out (what a caller uses)."""
    if input_kind == "pil":

        def run_pil(image: Any) -> Any:
            out = transform(image)
            return np.asarray(out) if not isinstance(out, torch.Tensor) else out.contiguous()

        return Op(run_pil, "pil", "u8", "hwc")
    layout: Layout = "bchw" if input_kind.startswith("b") else "chw"

    def run_tensor(image: torch.Tensor) -> torch.Tensor:
        return transform(image).contiguous()

    return Op(run_tensor, input_kind, "u8", layout)


def _jitter(b: float = 1.0, c: float = 1.0, s: float = 1.0, h: float = 0.0) -> v2.Transform:
    return v2.ColorJitter(brightness=(b, b), contrast=(c, c), saturation=(s, s), hue=(h, h))


def _normalize() -> v2.Transform:
    return v2.Normalize(mean=IMAGENET_MEAN, std=IMAGENET_STD)


# Transforms whose output is not a uint8 image: (transform, output kind, PIL needs ToImage first)
def _float_op(steps: list[v2.Transform], output: OutputKind, input_kind: InputKind) -> Op:
    transform = v2.Compose(steps if input_kind != "pil" else [v2.PILToTensor(), *steps])
    layout: Layout = "bchw" if input_kind.startswith("b") else "chw"

    def run(image: Any) -> torch.Tensor:
        return transform(image).contiguous()

    return Op(run, input_kind, output, layout)


def _to_tensor_op(input_kind: InputKind) -> Op:
    """From the decoded HxWx3 array (tensor variant) or the PIL image, to 3xHxW float in [0, 1]."""
    transform = v2.Compose([v2.ToImage(), _to_float()])

    def run(image: Any) -> torch.Tensor:
        return transform(image).contiguous()

    return Op(run, "hwc-uint8" if input_kind != "pil" else "pil", "unit", "chw")


_IMAGE_TRANSFORMS: dict[str, Callable[[], v2.Transform]] = {
    "hflip": lambda: v2.RandomHorizontalFlip(p=1),
    "vflip": lambda: v2.RandomVerticalFlip(p=1),
    "rotate90": lambda: v2.RandomRotation(degrees=(90, 90), expand=True),
    "rotate": lambda: v2.RandomRotation(
        degrees=(spec.ROTATE_DEG, spec.ROTATE_DEG), interpolation=BILINEAR, fill=0
    ),
    "affine": lambda: v2.RandomAffine(
        degrees=(spec.AFFINE_DEG, spec.AFFINE_DEG),
        scale=(spec.AFFINE_SCALE, spec.AFFINE_SCALE),
        shear=(spec.AFFINE_SHEAR_DEG, spec.AFFINE_SHEAR_DEG, 0, 0),
        interpolation=BILINEAR,
        fill=0,
    ),
    "perspective": lambda: v2.RandomPerspective(distortion_scale=spec.PERSPECTIVE_DISTORTION, p=1),
    "resize": lambda: v2.Resize((spec.SIZE, spec.SIZE), interpolation=BILINEAR, antialias=True),
    "random_resized_crop": lambda: v2.RandomResizedCrop(
        spec.SIZE, scale=spec.RRC_SCALE, ratio=spec.RRC_RATIO, antialias=True
    ),
    "center_crop": lambda: v2.CenterCrop(spec.SIZE),
    "random_crop": lambda: v2.RandomCrop(spec.SIZE),
    "pad": lambda: v2.Pad(spec.PAD, fill=0),
    "brightness": lambda: _jitter(b=spec.BRIGHTNESS),
    "contrast": lambda: _jitter(c=spec.CONTRAST),
    "saturation": lambda: _jitter(s=spec.SATURATION),
    "hue": lambda: _jitter(h=spec.HUE),
    "color_jitter": lambda: v2.ColorJitter(*spec.JITTER),
    "grayscale": lambda: v2.Grayscale(num_output_channels=3),
    "gaussian_blur": lambda: v2.GaussianBlur(
        spec.BLUR_KERNEL, sigma=(spec.BLUR_SIGMA, spec.BLUR_SIGMA)
    ),
    "sharpen": lambda: v2.RandomAdjustSharpness(spec.SHARPNESS, p=1),
    "equalize": lambda: v2.RandomEqualize(p=1),
    "posterize": lambda: v2.RandomPosterize(spec.POSTERIZE_BITS, p=1),
    "solarize": lambda: v2.RandomSolarize(spec.SOLARIZE_THRESHOLD, p=1),
    "invert": lambda: v2.RandomInvert(p=1),
    "elastic": lambda: v2.ElasticTransform(
        alpha=spec.ELASTIC_ALPHA, sigma=spec.ELASTIC_SIGMA, fill=0
    ),
    "jpeg": lambda: v2.JPEG(quality=spec.JPEG_QUALITY),
}


def transforms(input_kind: InputKind) -> dict[str, Callable[[], Op]]:
    """Builders for every transform, for tensors (``chw-uint8-tensor``) or ``pil`` inputs."""

    def on(make: Callable[[], v2.Transform]) -> Callable[[], Op]:
        return lambda: _run_on(make(), input_kind)

    built = {name: on(make) for name, make in _IMAGE_TRANSFORMS.items()}
    built["normalize"] = lambda: _float_op([_to_float(), _normalize()], "norm", input_kind)
    built["to_tensor"] = lambda: _to_tensor_op(input_kind)
    erase = v2.RandomErasing(p=1, scale=spec.ERASE_SCALE, ratio=spec.ERASE_RATIO, value=0)
    if input_kind == "pil":  # v2.RandomErasing has no PIL kernel: it runs on the tensor
        built["random_erasing"] = lambda: _float_op([erase], "u8", input_kind)
    else:
        built["random_erasing"] = lambda: _run_on(erase, input_kind)
    return built


def _train_steps() -> list[v2.Transform]:
    return [
        v2.RandomResizedCrop(spec.SIZE, scale=spec.RRC_SCALE, ratio=spec.RRC_RATIO, antialias=True),
        v2.RandomHorizontalFlip(p=spec.FLIP_P),
        v2.ColorJitter(*spec.JITTER),
    ]


PIPELINE_STEPS: dict[str, Callable[[], tuple[list[v2.Transform], list[v2.Transform] | None]]] = {
    # (steps on the uint8 image, steps after conversion to float)
    "train-classification": lambda: (_train_steps(), [_normalize()]),
    "train-uint8": lambda: (_train_steps(), None),  # None: stays uint8, no float conversion
    "light": lambda: (
        [v2.Resize(spec.RESIZE_SHORT, antialias=True), v2.CenterCrop(spec.SIZE)],
        [_normalize()],
    ),
    "heavy": lambda: (
        [
            *_train_steps(),
            v2.RandomRotation(spec.HEAVY_ROTATE_DEG, interpolation=BILINEAR, fill=0),
            v2.GaussianBlur(spec.BLUR_KERNEL, sigma=spec.HEAVY_BLUR_SIGMA),
        ],
        [
            _normalize(),
            v2.RandomErasing(
                p=spec.HEAVY_ERASE_P, scale=spec.ERASE_SCALE, ratio=spec.ERASE_RATIO, value=0
            ),
        ],
    ),
}


def pipelines(input_kind: InputKind) -> dict[str, Callable[[], Op]]:
    """The pipelines for tensors, batches of tensors, or PIL images (PIL -> tensor via ToImage)."""

    def build(name: str) -> Op:
        on_uint8, on_float = PIPELINE_STEPS[name]()
        to_tensor = [v2.ToImage()] if input_kind == "pil" else []
        to_float = [] if on_float is None else [_to_float(), *on_float]
        transform = v2.Compose([*on_uint8, *to_tensor, *to_float])
        layout: Layout = "bchw" if input_kind.startswith("b") else "chw"

        def run(image: Any) -> torch.Tensor:
            return transform(image).contiguous()

        output: OutputKind = "u8" if on_float is None else "norm"
        return Op(run, input_kind, output, layout)

    return {name: partial(build, name) for name in PIPELINE_STEPS}


# tasks beyond classification (augment/tasks.py): an Image and a tv_tensors.Mask through one call;
# v2 resizes a Mask with nearest and passes it through the photometric steps


def _seg_result(image: torch.Tensor, mask: torch.Tensor) -> Any:
    classes = mask.to(torch.int64)
    onehot = torch.zeros((tasks.N_CLASSES, *classes.shape), dtype=torch.float32)
    onehot.scatter_(0, classes.unsqueeze(0), 1.0)
    return image.as_subclass(torch.Tensor).contiguous(), classes.as_subclass(torch.Tensor), onehot


def _seg_float() -> list[v2.Transform]:
    return [
        v2.ToDtype({tv_tensors.Image: torch.float32, "others": None}, scale=True),
        _normalize(),
    ]


def _segmentation() -> tasks.TaskOp:
    transform = v2.Compose([*_train_steps(), *_seg_float()])
    to_float = v2.Compose(_seg_float())

    def run(sample: Any) -> Any:
        return _seg_result(*transform(sample))

    def pinned(sample: Any, g: tasks.Geometry) -> Any:
        size = [tasks.SEG_SIZE, tasks.SEG_SIZE]
        image, mask = (
            v2.functional.resized_crop(x, g.top, g.left, g.height, g.width, size, antialias=True)
            for x in sample
        )
        if g.flip:
            image, mask = v2.functional.horizontal_flip(image), v2.functional.horizontal_flip(mask)
        return _seg_result(*to_float((image, mask)))

    return tasks.TaskOp(run, "tv", pinned)


def _crop_ocr() -> tasks.TaskOp:
    x0, y0, x1, y1 = tasks.OCR_BOX
    width, height = tasks.OCR_SIZE

    def run(sample: Any) -> torch.Tensor:
        window = v2.functional.crop(sample[0], y0, x0, y1 - y0, x1 - x0)  # pads with zeros
        out = v2.functional.resize(
            window, [height, width], interpolation=v2.InterpolationMode.BICUBIC, antialias=True
        )[:3]
        return out.permute(1, 2, 0).float().div_(255.0).as_subclass(torch.Tensor).contiguous()

    return tasks.TaskOp(run, "tv")


def _onehot(sample: tuple[int, list[torch.Tensor]]) -> list[torch.Tensor]:
    """Keras' to_categorical in torch: zeros and a scatter (F.one_hot makes int64 first)."""
    classes, heads = sample
    return [
        torch.zeros((labels.shape[0], classes)).scatter_(1, labels.unsqueeze(1), 1.0)
        for labels in heads
    ]


def task_recipes(input_kind: InputKind) -> dict[str, Callable[[], tasks.TaskOp]]:
    if input_kind != "chw-uint8-tensor":
        return {}
    return {
        "segmentation": _segmentation,
        "crop-ocr": _crop_ocr,
        "onehot": lambda: tasks.TaskOp(_onehot, "torch"),
    }
