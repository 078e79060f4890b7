"""albumentations 2.x on HxWx3 uint8 numpy arrays; each transform called directly with p=1.

The same module runs AlbumentationsX (its ``albumentations`` package, in the albumentationsx env).

Random-range parameters are given degenerate ranges (e.g. brightness=(1.3, 1.3)) so the
library's own sampling still runs while the result is checkable. Downscales use INTER_AREA
(``area_for_downscale="image"``): OpenCV's INTER_LINEAR is not antialiased, and the other
libraries antialias (see spec.py).
"""

from __future__ import annotations

import os

os.environ.setdefault("NO_ALBUMENTATIONS_UPDATE", "1")
os.environ.setdefault("ALBUMENTATIONS_NO_TELEMETRY", "1")  # AlbumentationsX's usage events

import inspect
from collections.abc import Callable
from typing import Any

import albumentations as A  # noqa: N812 (the library's own convention)
import cv2
import numpy as np

from imgbench.augment import spec, tasks
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


# AlbumentationsX (the albumentationsx env) renamed the range arguments (Rotate's limit is
# angle_range, ColorJitter's brightness brightness_range, ...) and only warns about the old names,
# ignoring them: each call below names the argument this version takes (``_ranges``)
X = "angle_range" in inspect.signature(A.Rotate.__init__).parameters
_RENAMED = {
    "limit": "angle_range",
    "blur_limit": "blur_range",
    "sigma_limit": "sigma_range",
    "alpha": "alpha_range",
    "lightness": "lightness_range",
    "brightness": "brightness_range",
    "contrast": "contrast_range",
    "saturation": "saturation_range",
    "hue": "hue_range",
}


def _ranges(**kwargs: Any) -> dict[str, Any]:
    """Range arguments under this version's names (AlbumentationsX: ``*_range``)."""
    return {(_RENAMED.get(k, k) if X else k): v for k, v in kwargs.items()}


def _rotate90_once() -> A.BasicTransform:
    """RandomRotate90 always by one quarter turn: the others' fixed rotate-90, same kernel.

    The stock transform draws k in 0..3, so a quarter of its calls would be no-ops.
    AlbumentationsX takes the turn as ``group_element`` (it rejects a ``get_params`` override);
    albumentations 2.0 has no such argument, so its draw is overridden.
    """
    if "group_element" in inspect.signature(A.RandomRotate90.__init__).parameters:
        return A.RandomRotate90(group_element="r90", p=1)

    class _Rotate90Once(A.RandomRotate90):
        def get_params(self) -> dict[str, int]:
            return {"factor": 1}

    return _Rotate90Once(p=1)


# Albumentations 2 seeds each transform and pipeline from the OS unless told: the same case then
# drew different random parameters (and did different work) in every session
SEED = 0


def _op(transform: A.BasicTransform, output: OutputKind = "u8") -> Op:
    transform.set_random_seed(SEED)

    def run(image: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(transform(image=image)["image"])

    return Op(run, "hwc-uint8", output)


def _jitter(b: float = 1.0, c: float = 1.0, s: float = 1.0, h: float = 0.0) -> A.ColorJitter:
    return A.ColorJitter(
        **_ranges(brightness=(b, b), contrast=(c, c), saturation=(s, s), hue=(h, h)), p=1
    )


def _random_jitter() -> A.ColorJitter:
    """spec.JITTER's strengths: factors in [1 - x, 1 + x], hue in [-h, h] (albumentations 2.0
    takes the scalars; AlbumentationsX only the ranges)."""
    b, c, s, h = spec.JITTER
    if not X:
        return A.ColorJitter(brightness=b, contrast=c, saturation=s, hue=h, p=1)
    return A.ColorJitter(
        **_ranges(brightness=(1 - b, 1 + b), contrast=(1 - c, 1 + c), saturation=(1 - s, 1 + s)),
        hue_range=(-h, h),
        p=1,
    )


def _gaussian_blur(sigma: tuple[float, float]) -> A.GaussianBlur:
    return A.GaussianBlur(
        **_ranges(blur_limit=(spec.BLUR_KERNEL, spec.BLUR_KERNEL), sigma_limit=sigma), p=1
    )


def _elastic() -> A.ElasticTransform:
    """AlbumentationsX replaced alpha/sigma (a Gaussian-smoothed field) with a displacement range
    on a control grid: its defaults there (a random transform: shape, dtype and range checked)."""
    if X:
        return A.ElasticTransform(fill=0, p=1)
    return A.ElasticTransform(alpha=spec.ELASTIC_ALPHA, sigma=spec.ELASTIC_SIGMA, fill=0, p=1)


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
    "rotate90": lambda: _op(_rotate90_once()),
    "rotate": lambda: _op(
        A.Rotate(
            **_ranges(limit=(spec.ROTATE_DEG, spec.ROTATE_DEG)),
            border_mode=cv2.BORDER_CONSTANT,
            fill=0,
            p=1,
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
    "color_jitter": lambda: _op(_random_jitter()),
    "grayscale": lambda: _op(A.ToGray(num_output_channels=3, method="weighted_average", p=1)),
    "gaussian_blur": lambda: _op(_gaussian_blur((spec.BLUR_SIGMA, spec.BLUR_SIGMA))),
    "median_blur": lambda: _op(
        A.MedianBlur(**_ranges(blur_limit=(spec.MEDIAN_KERNEL, spec.MEDIAN_KERNEL)), p=1)
    ),
    "sharpen": lambda: _op(A.Sharpen(**_ranges(alpha=(0.5, 0.5), lightness=(1.0, 1.0)), p=1)),
    "equalize": lambda: _op(A.Equalize(mode="pil", by_channels=True, p=1)),
    "posterize": lambda: _op(  # AlbumentationsX takes a range only
        A.Posterize(num_bits=(spec.POSTERIZE_BITS,) * 2 if X else spec.POSTERIZE_BITS, p=1)
    ),
    "solarize": lambda: _op(A.Solarize(threshold_range=(spec.SOLARIZE_THRESHOLD / 255,) * 2, p=1)),
    "invert": lambda: _op(A.InvertImg(p=1)),
    "normalize": lambda: _op(A.Normalize(mean=IMAGENET_MEAN, std=IMAGENET_STD), "norm"),
    "to_tensor": _to_tensor,
    "random_erasing": lambda: _op(
        A.Erasing(scale=spec.ERASE_SCALE, ratio=spec.ERASE_RATIO, fill=0, p=1)
    ),
    "elastic": lambda: _op(_elastic()),
    "jpeg": lambda: _op(
        A.ImageCompression(quality_range=(spec.JPEG_QUALITY, spec.JPEG_QUALITY), p=1)
    ),
}


def _train() -> list[A.BasicTransform]:
    return [
        A.RandomResizedCrop(
            size=(spec.SIZE, spec.SIZE), scale=spec.RRC_SCALE, ratio=spec.RRC_RATIO, **AREA
        ),
        A.HorizontalFlip(p=spec.FLIP_P),
        _random_jitter(),
        A.Normalize(mean=IMAGENET_MEAN, std=IMAGENET_STD),
    ]


def _heavy() -> list[A.BasicTransform]:
    train = _train()
    return [
        *train[:3],
        A.Rotate(**_ranges(limit=(-spec.HEAVY_ROTATE_DEG, spec.HEAVY_ROTATE_DEG)), fill=0, p=1),
        _gaussian_blur(spec.HEAVY_BLUR_SIGMA),
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


# tasks beyond classification (augment/tasks.py): image and mask through one Compose call


def _seg_result(out: dict[str, Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    mask = out["mask"]
    return chw_float(out["image"]), mask.astype(np.int64), tasks.onehot_np(mask)


def _segmentation() -> tasks.TaskOp:
    train = _train()  # crop (mask: nearest, albumentations' default), flip, jitter, normalise
    compose = A.Compose(train, seed=SEED)

    def run(sample: tuple[np.ndarray, np.ndarray]) -> Any:
        return _seg_result(compose(image=sample[0], mask=sample[1]))

    def pinned(sample: tuple[np.ndarray, np.ndarray], g: tasks.Geometry) -> Any:
        steps = [
            A.Crop(x_min=g.left, y_min=g.top, x_max=g.left + g.width, y_max=g.top + g.height),
            A.Resize(tasks.SEG_SIZE, tasks.SEG_SIZE, **AREA),
            A.HorizontalFlip(p=1.0 if g.flip else 0.0),
            train[3],
        ]
        return _seg_result(A.Compose(steps)(image=sample[0], mask=sample[1]))

    return tasks.TaskOp(run, "numpy", pinned)


def _crop_ocr() -> tasks.TaskOp:
    x0, y0, x1, y1 = tasks.OCR_BOX
    width, height = tasks.OCR_SIZE
    compose = A.Compose(
        [
            A.Crop(
                x_min=x0, y_min=y0, x_max=x1, y_max=y1, pad_if_needed=True, pad_position="top_left"
            ),
            A.Resize(height, width, interpolation=cv2.INTER_CUBIC),
        ]
    )

    def run(sample: tuple[np.ndarray, Any]) -> np.ndarray:
        out = compose(image=sample[0])["image"][..., :3]
        return out.astype(np.float32) / np.float32(255.0)

    return tasks.TaskOp(run, "numpy")


def task_recipes(input_kind: InputKind) -> dict[str, Callable[[], tasks.TaskOp]]:
    return {"segmentation": _segmentation, "crop-ocr": _crop_ocr}
