"""Tasks beyond classification: what a sample is and what a recipe hands the model (issue 32).

- ``segmentation``: an image and its mask. RandomResizedCrop and horizontal flip are drawn once
  and applied to both (bilinear/area for the image, nearest-neighbour for the mask), colour
  jitter touches the image only. Out: the image 3xHxW float32 ImageNet-normalised, the mask
  HxW int64 class indices, and the mask one-hot CxHxW float32 (C = the colour table's classes).
- ``crop-ocr``: seed 000's Keras ``Sequence``: ``Image.crop((186, 0, 300, 30))`` (a PIL box:
  left, upper, right, lower, so a 114x30 window at the top), ``resize((128, 32))`` (PIL sizes are
  width x height: arrays are 32x128x3), 3 channels, float32 / 255. Its four one-hot label heads
  (``to_categorical`` of 21,000 classes for batches of 128) are their own case (``onehot_*``).

Adapters expose ``tasks(input_kind)``: task name -> builder of a ``TaskOp``. ``SUPPORT`` says
which library/variant builds which task, without importing the library.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from imgbench.augment import handmade, spec

# the mask's facts are the dataset's (datasets.masks); the recipes use them under these names
from imgbench.datasets.masks import COLOURS as COLOURS
from imgbench.datasets.masks import N_CLASSES as N_CLASSES
from imgbench.datasets.masks import MaskError as MaskError
from imgbench.datasets.masks import check_pair as check_pair
from imgbench.datasets.masks import mask_indices as mask_indices

TASKS = ("classification", "segmentation", "crop-ocr")
SEG_SIZE = spec.SIZE  # square output of the segmentation recipe
OCR_BOX = (186, 0, 300, 30)  # PIL crop box (left, upper, right, lower) = x0, y0, x1, y1
OCR_SIZE = (128, 32)  # PIL resize (width, height): the array is 32x128x3
OCR_HEADS = 4
OCR_CLASSES = 21_000
OCR_BATCH = 128
# image tolerance of the pinned segmentation check, grey levels: area vs antialiased bilinear
SEG_IMAGE_MEAN_TOL = 3.0
OCR_IMAGE_MEAN_TOL = 3.0  # bicubic a=-0.5 (Pillow) vs a=-0.75 (OpenCV, torch)

SampleKind = Literal["numpy", "pil", "tv", "torch"]

# library/variant (rows_of or library) -> tasks its adapter builds
SUPPORT: dict[str, tuple[str, ...]] = {
    "albumentations/numpy": ("segmentation", "crop-ocr"),
    "torchvision/v2-tensor": ("segmentation", "crop-ocr", "onehot"),
    "kornia/tensor": ("segmentation",),
    "opencv/numpy": ("segmentation", "crop-ocr", "onehot"),
    "pillow/pil": ("crop-ocr", "segmentation"),
}
REFERENCE = {"segmentation": "torchvision/v2-tensor", "crop-ocr": "pillow/pil"}
RECIPES = {
    "segmentation": (
        f"RandomResizedCrop {SEG_SIZE} (scale {spec.RRC_SCALE}, ratio 3/4..4/3) and horizontal "
        f"flip p={spec.FLIP_P} on image and mask with the same draw (mask: nearest) -> "
        f"ColorJitter{spec.JITTER} on the image -> image 3xHxW float32 normalised, mask HxW "
        f"int64, one-hot {N_CLASSES}xHxW float32"
    ),
    "crop-ocr": (
        f"crop box {OCR_BOX} (x0, y0, x1, y1; zero-padded outside the image) -> resize to "
        f"{OCR_SIZE[0]}x{OCR_SIZE[1]} (bicubic) -> 3 channels -> float32 / 255, "
        f"{OCR_SIZE[1]}x{OCR_SIZE[0]}x3"
    ),
    "onehot": (
        f"{OCR_HEADS} label heads of {OCR_BATCH} int labels -> one-hot float32 "
        f"{OCR_BATCH}x<classes> each (Keras to_categorical)"
    ),
}


def supports(key: str, task: str) -> bool:
    return task in SUPPORT.get(key, ())


@dataclass(frozen=True)
class Geometry:
    """One draw of the paired geometry: the crop window and whether to flip."""

    left: int
    top: int
    width: int
    height: int
    flip: bool


def draw_geometry(width: int, height: int) -> Geometry:
    """torchvision's RandomResizedCrop sampling and a flip with p=FLIP_P."""
    left, top, w, h = handmade.rrc_box(width, height)
    return Geometry(left, top, w, h, random.random() < spec.FLIP_P)


@dataclass(frozen=True)
class TaskOp:
    """One library's recipe for a task, built once.

    ``fn`` runs on one prepared sample (``make_sample``) inside the timing; ``pinned`` (the
    segmentation recipe) does the same geometric work with the geometry forced and no jitter, so
    libraries can be compared exactly.
    """

    fn: Callable[[Any], Any]
    sample: SampleKind
    pinned: Callable[[Any, Geometry], Any] | None = None


def make_sample(image: np.ndarray, mask: np.ndarray | None, kind: SampleKind) -> Any:
    """An HxWx3 uint8 image (and HxW uint8 class-index mask) in a library's form (untimed)."""
    if kind == "numpy":
        return (np.ascontiguousarray(image), None if mask is None else np.ascontiguousarray(mask))
    if kind == "pil":
        from PIL import Image

        return Image.fromarray(image, mode="RGB")
    import torch

    chw = torch.from_numpy(np.array(image)).permute(2, 0, 1).contiguous()  # writable copies
    tmask = None if mask is None else torch.from_numpy(np.array(mask))
    if kind == "tv":
        from torchvision import tv_tensors

        return (
            tv_tensors.Image(chw),
            None if tmask is None else tv_tensors.Mask(tmask),
        )
    return (chw, tmask)


def as_numpy(value: Any) -> np.ndarray:
    if hasattr(value, "detach"):
        return np.asarray(value.detach().cpu().numpy())
    return np.asarray(value)


def onehot_np(mask: np.ndarray, classes: int = N_CLASSES) -> np.ndarray:
    """HxW class indices -> CxHxW float32 one-hot (contiguous)."""
    return (mask[None, :, :] == np.arange(classes, dtype=mask.dtype)[:, None, None]).astype(
        np.float32
    )


def to_categorical(labels: np.ndarray, classes: int) -> np.ndarray:
    """Keras ``to_categorical``: N int labels -> Nxclasses float32."""
    out = np.zeros((labels.shape[0], classes), dtype=np.float32)
    out[np.arange(labels.shape[0]), labels] = 1.0
    return out


def ocr_window(image: np.ndarray) -> np.ndarray:
    """The crop box of an HxWx3 array, zero-padded where it leaves the image (as PIL's crop)."""
    x0, y0, x1, y1 = OCR_BOX
    h, w = image.shape[:2]
    if x1 <= w and y1 <= h:
        return image[y0:y1, x0:x1]
    out = np.zeros((y1 - y0, x1 - x0, image.shape[2]), dtype=image.dtype)
    xs, ys = min(x1, w), min(y1, h)
    if xs > x0 and ys > y0:
        out[: ys - y0, : xs - x0] = image[y0:ys, x0:xs]
    return out
