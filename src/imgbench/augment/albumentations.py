"""albumentations 2.x on HxWx3 uint8 numpy arrays; each transform called directly with p=1.

Random-range parameters are given degenerate ranges (e.g. brightness=(1.3, 1.3)) so the
library's own sampling still runs while the result is checkable. Downscales use INTER_AREA
(``area_for_downscale="image"``): OpenCV's INTER_LINEAR is not antialiased, and the other
libraries antialias (see spec.py).
"""

from __future__ import annotations

import os

os.environ.setdefault("NO_ALBUMENTATIONS_UPDATE", "1")

from collections.abc import Callable

import albumentations as A  # noqa: N812 (the library's own convention)
import cv2
import numpy as np

from imgbench.augment import spec
from imgbench.augment.base import (
    IMAGENET_MEAN,
    IMAGENET_STD,
    InputKind,
    Op,
    OutputKind,
    chw_float,
    chw_uint8,
)

LIBRARY = "albumentations"


class _Rotate90Once(A.RandomRotate90):
    """RandomRotate90 always by one quarter turn: the others' fixed rotate-90, same kernel.

    The stock transform draws k in 0..3, so a quarter of its calls would be no-ops.
    """

    def get_params(self) -> dict[str, int]:
        return {"factor": 1}


# Albumentations 2 seeds each transform and pipeline from the OS unless told: the same case then
# drew different random parameters (and did different work) in every session
SEED = 0


def _op(transform: A.BasicTransform, output: OutputKind = "u8") -> Op:
    transform.set_random_seed(SEED)

    def run(image: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(transform(image=image)["image"])

    return Op(run, "hwc-uint8", output)


def _jitter(b: float = 1.0, c: float = 1.0, s: float = 1.0, h: float = 0.0) -> A.ColorJitter:
    return A.ColorJitter(brightness=(b, b), contrast=(c, c), saturation=(s, s), hue=(h, h), p=1)


def _to_tensor() -> Op:
    def run(image: np.ndarray) -> np.ndarray:
        return chw_float(image.astype(np.float32) / 255.0)

    return Op(run, "hwc-uint8", "unit", "chw")


def _compose_chw(steps: list[A.BasicTransform]) -> Op:
    """A pipeline ending in a normalised contiguous 3xHxW float32 array."""
    pipeline = A.Compose(steps, seed=SEED)

    def run(image: np.ndarray) -> np.ndarray:
        return chw_float(pipeline(image=image)["image"])

    return Op(run, "hwc-uint8", "norm", "chw")


def _compose_chw_uint8(steps: list[A.BasicTransform]) -> Op:
    """A pipeline ending in a contiguous 3xHxW uint8 array (no Normalize)."""
    pipeline = A.Compose(steps, seed=SEED)

    def run(image: np.ndarray) -> np.ndarray:
        return chw_uint8(pipeline(image=image)["image"])

    return Op(run, "hwc-uint8", "u8", "chw")


AREA = {"interpolation": cv2.INTER_LINEAR, "area_for_downscale": "image"}

TRANSFORMS: dict[str, Callable[[], Op]] = {
    "hflip": lambda: _op(A.HorizontalFlip(p=1)),
    "vflip": lambda: _op(A.VerticalFlip(p=1)),
    "rotate90": lambda: _op(_Rotate90Once(p=1)),
    "rotate": lambda: _op(
        A.Rotate(
            limit=(spec.ROTATE_DEG, spec.ROTATE_DEG), border_mode=cv2.BORDER_CONSTANT, fill=0, p=1
        )
    ),
    "affine": lambda: _op(
        A.Affine(
            rotate=(-spec.AFFINE_DEG, -spec.AFFINE_DEG),  # opposite sign to torchvision's
            scale=(spec.AFFINE_SCALE, spec.AFFINE_SCALE),
            shear={"x": (spec.AFFINE_SHEAR_DEG, spec.AFFINE_SHEAR_DEG), "y": (0, 0)},
            border_mode=cv2.BORDER_CONSTANT,
            fill=0,
            p=1,
        )
    ),
    "perspective": lambda: _op(
        A.Perspective(scale=(0.0, spec.PERSPECTIVE_DISTORTION / 2), fill=0, p=1)
    ),
    "resize": lambda: _op(A.Resize(spec.SIZE, spec.SIZE, **AREA)),
    "random_resized_crop": lambda: _op(
        A.RandomResizedCrop(
            size=(spec.SIZE, spec.SIZE), scale=spec.RRC_SCALE, ratio=spec.RRC_RATIO, **AREA
        )
    ),
    "center_crop": lambda: _op(A.CenterCrop(spec.SIZE, spec.SIZE)),
    "random_crop": lambda: _op(A.RandomCrop(spec.SIZE, spec.SIZE)),
    "pad": lambda: _op(A.Pad(padding=spec.PAD, fill=0, border_mode=cv2.BORDER_CONSTANT)),
    "brightness": lambda: _op(_jitter(b=spec.BRIGHTNESS)),
    "contrast": lambda: _op(_jitter(c=spec.CONTRAST)),
    "saturation": lambda: _op(_jitter(s=spec.SATURATION)),
    "hue": lambda: _op(_jitter(h=spec.HUE)),
    "color_jitter": lambda: _op(
        A.ColorJitter(
            brightness=spec.JITTER[0],
            contrast=spec.JITTER[1],
            saturation=spec.JITTER[2],
            hue=spec.JITTER[3],
            p=1,
        )
    ),
    "grayscale": lambda: _op(A.ToGray(num_output_channels=3, method="weighted_average", p=1)),
    "gaussian_blur": lambda: _op(
        A.GaussianBlur(
            blur_limit=(spec.BLUR_KERNEL, spec.BLUR_KERNEL),
            sigma_limit=(spec.BLUR_SIGMA, spec.BLUR_SIGMA),
            p=1,
        )
    ),
    "median_blur": lambda: _op(
        A.MedianBlur(blur_limit=(spec.MEDIAN_KERNEL, spec.MEDIAN_KERNEL), p=1)
    ),
    "sharpen": lambda: _op(A.Sharpen(alpha=(0.5, 0.5), lightness=(1.0, 1.0), p=1)),
    "equalize": lambda: _op(A.Equalize(mode="pil", by_channels=True, p=1)),
    "posterize": lambda: _op(A.Posterize(num_bits=spec.POSTERIZE_BITS, p=1)),
    "solarize": lambda: _op(A.Solarize(threshold_range=(spec.SOLARIZE_THRESHOLD / 255,) * 2, p=1)),
    "invert": lambda: _op(A.InvertImg(p=1)),
    "normalize": lambda: _op(A.Normalize(mean=IMAGENET_MEAN, std=IMAGENET_STD), "norm"),
    "to_tensor": _to_tensor,
    "random_erasing": lambda: _op(
        A.Erasing(scale=spec.ERASE_SCALE, ratio=spec.ERASE_RATIO, fill=0, p=1)
    ),
    "elastic": lambda: _op(
        A.ElasticTransform(alpha=spec.ELASTIC_ALPHA, sigma=spec.ELASTIC_SIGMA, fill=0, p=1)
    ),
    "jpeg": lambda: _op(
        A.ImageCompression(quality_range=(spec.JPEG_QUALITY, spec.JPEG_QUALITY), p=1)
    ),
}


def _train() -> list[A.BasicTransform]:
    b, c, s, h = spec.JITTER
    return [
        A.RandomResizedCrop(
            size=(spec.SIZE, spec.SIZE), scale=spec.RRC_SCALE, ratio=spec.RRC_RATIO, **AREA
        ),
        A.HorizontalFlip(p=spec.FLIP_P),
        A.ColorJitter(brightness=b, contrast=c, saturation=s, hue=h, p=1),
        A.Normalize(mean=IMAGENET_MEAN, std=IMAGENET_STD),
    ]


def _heavy() -> list[A.BasicTransform]:
    train = _train()
    return [
        *train[:3],
        A.Rotate(limit=(-spec.HEAVY_ROTATE_DEG, spec.HEAVY_ROTATE_DEG), fill=0, p=1),
        A.GaussianBlur(
            blur_limit=(spec.BLUR_KERNEL, spec.BLUR_KERNEL), sigma_limit=spec.HEAVY_BLUR_SIGMA, p=1
        ),
        train[3],
        A.Erasing(scale=spec.ERASE_SCALE, ratio=spec.ERASE_RATIO, fill=0, p=spec.HEAVY_ERASE_P),
    ]


PIPELINES: dict[str, Callable[[], Op]] = {
    "train-classification": lambda: _compose_chw(_train()),
    "train-uint8": lambda: _compose_chw_uint8(_train()[:-1]),
    "light": lambda: _compose_chw(
        [
            A.SmallestMaxSize(max_size=spec.RESIZE_SHORT, **AREA),
            A.CenterCrop(spec.SIZE, spec.SIZE),
            A.Normalize(mean=IMAGENET_MEAN, std=IMAGENET_STD),
        ]
    ),
    "heavy": lambda: _compose_chw(_heavy()),
}


def transforms(input_kind: InputKind) -> dict[str, Callable[[], Op]]:
    return TRANSFORMS


def pipelines(input_kind: InputKind) -> dict[str, Callable[[], Op]]:
    return PIPELINES
