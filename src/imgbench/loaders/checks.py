"""The first batch a loader hands over, checked before any timing: a fast loader of wrong batches
measures nothing.

Checked: the number of images, their layout and size (B x 3 x 224 x 224 from an augmenting
pipeline, B x 224 x 224 x 3 from tf.data's own graph, a list of HxWx3 arrays from the decode-only
pipeline), the dtype (float32, uint8 for ``train-uint8`` and decode-only), the values (finite;
normalised floats within what ImageNet normalisation of [0, 1] can give; not all one value), and
the labels (B ints, each one of the dataset's). Batches are read through ``numpy`` whatever the
loader returns (torch tensors, NumPy arrays, eager TensorFlow tensors), so the check imports no
library of its own and runs in the TensorFlow environment too.

Tasks (``BatchExpectation.task``): a segmentation batch is B x 3 x 224 x 224 normalised float32
images and B x 224 x 224 int64 masks whose values are classes of the colour table; a crop-ocr
batch is B x 32 x 128 x 3 float32 images in [0, 1] and B x 4 x classes float32 one-hot heads
(each row one 1, the rest 0).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from imgbench.augment.base import IMAGENET_MEAN, IMAGENET_STD
from imgbench.loaders.base import Batch
from imgbench.loaders.pipeline import NO_AUGMENT, PipelineConfig

SIDE = 224  # the augment stage's pipelines end in 3 x 224 x 224
UINT8_RECIPES = frozenset({"train-uint8"})  # normalised on the accelerator: uint8 batches
TF_AUGMENT = "tensorflow"  # tf.data's own graph: HxWx3, TensorFlow's layout
# ImageNet normalisation of values in [0, 1]; the slack absorbs float rounding and filters
NORM_LOW = min(-m / s for m, s in zip(IMAGENET_MEAN, IMAGENET_STD, strict=True))
NORM_HIGH = max((1 - m) / s for m, s in zip(IMAGENET_MEAN, IMAGENET_STD, strict=True))
NORM_SLACK = 0.05

Layout = Literal["chw", "hwc", "list"]


@dataclass(frozen=True)
class BatchExpectation:
    """What the first batch of a pipeline must look like."""

    batch_size: int
    layout: Layout
    dtype: Literal["float32", "uint8"]
    labels: frozenset[int] | None = None  # the dataset's labels; None: ints of any value
    task: str = "classification"
    classes: int = 0  # segmentation: classes of the colour table; crop-ocr: classes per head

    def image_shape(self) -> tuple[int, ...]:
        if self.task == "crop-ocr":
            from imgbench.augment.tasks import OCR_SIZE

            return (OCR_SIZE[1], OCR_SIZE[0], 3)
        return (3, SIDE, SIDE) if self.layout == "chw" else (SIDE, SIDE, 3)

    def describe(self) -> str:
        if self.task == "segmentation":
            dims = " x ".join(str(n) for n in (self.batch_size, *self.image_shape()))
            return (
                f"images {dims} float32 in "
                f"[{NORM_LOW:.2f}, {NORM_HIGH:.2f}]; masks {self.batch_size} x {SIDE} x {SIDE} "
                f"int64 in [0, {self.classes - 1}]"
            )
        if self.task == "crop-ocr":
            dims = " x ".join(str(n) for n in (self.batch_size, *self.image_shape()))
            return (
                f"images {dims} float32 in [0, 1]; labels {self.batch_size} x 4 x "
                f"{self.classes} float32 one-hot"
            )
        if self.layout == "list":
            images = f"list of {self.batch_size} HxWx3 uint8 arrays"
        else:
            shape = (3, SIDE, SIDE) if self.layout == "chw" else (SIDE, SIDE, 3)
            images = " x ".join(str(n) for n in (self.batch_size, *shape)) + f" {self.dtype}"
            if self.dtype == "float32":
                images += f" in [{NORM_LOW:.2f}, {NORM_HIGH:.2f}]"
        labels = "ints" if self.labels is None else f"ints in {sorted(self.labels)}"
        return f"images {images}; labels {labels}"


def expectation(
    config: PipelineConfig, batch_size: int, labels: Iterable[int] | None
) -> BatchExpectation:
    """The first batch a loader of ``config``'s pipeline must produce."""
    known = None if labels is None else frozenset(int(label) for label in labels)
    layout: Layout = "hwc" if config.augment == TF_AUGMENT else "chw"
    if config.task != "classification":
        from imgbench.augment.tasks import N_CLASSES, OCR_CLASSES

        classes = N_CLASSES if config.task == "segmentation" else OCR_CLASSES
        return BatchExpectation(batch_size, layout, "float32", None, config.task, classes)
    if config.augment == NO_AUGMENT:
        return BatchExpectation(batch_size, "list", "uint8", known)
    dtype: Literal["float32", "uint8"] = "uint8" if config.recipe in UINT8_RECIPES else "float32"
    return BatchExpectation(batch_size, layout, dtype, known)


def known_labels(source: Any) -> frozenset[int] | None:
    """The labels a pipeline source holds (``labels`` of the files, or a built format's key
    list), or None for a source that does not say."""
    labels = getattr(source, "labels", None)
    if labels is not None:
        return frozenset(int(label) for label in np.asarray(labels).ravel())
    path = getattr(source, "path", None)
    if path is not None:
        from imgbench.formats.base import read_keys

        return frozenset(label for _, label in read_keys(path))
    return None


def as_numpy(value: Any) -> np.ndarray:
    """A torch tensor, an eager TensorFlow tensor or an array, as a NumPy array (untimed)."""
    if isinstance(value, np.ndarray):
        return value
    if hasattr(value, "detach"):  # torch
        return np.asarray(value.detach().cpu().numpy())
    if hasattr(value, "numpy"):  # TensorFlow eager tensors
        return np.asarray(value.numpy())
    return np.asarray(value)


def _values_problem(array: np.ndarray, dtype: str, unit: bool = False) -> str | None:
    if array.size == 0:
        return "no values"
    if unit:  # float32 / 255: [0, 1]
        low, high = float(array.min()), float(array.max())
        if not np.isfinite(array).all() or low < 0 or high > 1:
            return f"values {low:.3g}..{high:.3g}, outside [0, 1] (not divided by 255?)"
    elif dtype == "float32":
        if not np.isfinite(array).all():
            return "non-finite values (NaN or inf)"
        low, high = float(array.min()), float(array.max())
        if low < NORM_LOW - NORM_SLACK or high > NORM_HIGH + NORM_SLACK:
            return (
                f"values {low:.3g}..{high:.3g}, outside normalised "
                f"[{NORM_LOW:.2f}, {NORM_HIGH:.2f}] (not normalised, or normalised twice?)"
            )
    low, high = float(array.min()), float(array.max())
    if low == high:
        return f"every value is {low:g}: blank images"
    return None


def _images_problem(images: Any, expect: BatchExpectation) -> str | None:
    if expect.layout == "list":
        if not isinstance(images, list | tuple):
            return f"images are {type(images).__name__}, expected a list of arrays"
        if len(images) != expect.batch_size:
            return f"{len(images)} images, expected {expect.batch_size}"
        for i, image in enumerate(images):
            array = as_numpy(image)
            if array.ndim != 3 or array.shape[2] != 3 or min(array.shape[:2]) < 1:
                return f"image {i} has shape {array.shape}, expected HxWx3"
            if array.dtype != np.uint8:
                return f"image {i} is {array.dtype}, expected uint8"
        return _values_problem(np.concatenate([as_numpy(im).ravel() for im in images]), "uint8")
    array = as_numpy(images)
    wanted = (expect.batch_size, *expect.image_shape())
    if tuple(array.shape) != wanted:
        return f"images have shape {tuple(array.shape)}, expected {wanted}"
    if array.dtype != np.dtype(expect.dtype):
        return f"images are {array.dtype}, expected {expect.dtype}"
    return _values_problem(array, expect.dtype, unit=expect.task == "crop-ocr")


def _masks_problem(masks: Any, expect: BatchExpectation) -> str | None:
    array = as_numpy(masks)
    wanted = (expect.batch_size, SIDE, SIDE)
    if tuple(array.shape) != wanted:
        return f"masks have shape {tuple(array.shape)}, expected {wanted}"
    if array.dtype != np.int64:
        return f"masks are {array.dtype}, expected int64"
    strangers = sorted({int(v) for v in np.unique(array)} - set(range(expect.classes)))
    if strangers:
        return f"mask values {strangers[:5]} are not classes of the colour table (0..{expect.classes - 1})"
    return None


def _heads_problem(heads: Any, expect: BatchExpectation) -> str | None:
    from imgbench.augment.tasks import OCR_HEADS

    array = as_numpy(heads)
    wanted = (expect.batch_size, OCR_HEADS, expect.classes)
    if tuple(array.shape) != wanted:
        return f"label heads have shape {tuple(array.shape)}, expected {wanted}"
    if array.dtype != np.float32:
        return f"label heads are {array.dtype}, expected float32 one-hot"
    ones = int(np.count_nonzero(array))
    if ones != expect.batch_size * OCR_HEADS or not np.all(array.max(axis=2) == 1):
        return f"label heads are not one-hot: {ones} non-zero values, expected one per row"
    return None


def _labels_problem(labels: Any, expect: BatchExpectation) -> str | None:
    array = as_numpy(labels)
    if array.shape != (expect.batch_size,):
        return f"labels have shape {tuple(array.shape)}, expected ({expect.batch_size},)"
    if array.dtype.kind not in "iu":
        return f"labels are {array.dtype}, expected ints"
    if expect.labels is not None:
        strangers = sorted({int(v) for v in array} - expect.labels)
        if strangers:
            return (
                f"labels {strangers[:5]} are not among the dataset's labels "
                f"{sorted(expect.labels)[:10]}"
            )
    return None


def check_batch(batch: Batch, expect: BatchExpectation) -> str | None:
    """What is wrong with ``batch``, or None when it is what ``expect`` says."""
    if not isinstance(batch, tuple | list) or len(batch) < 2:
        return f"a batch is {type(batch).__name__}, expected (images, labels, ...)"
    images = _images_problem(batch[0], expect)
    if images or expect.task == "classification":
        return images or _labels_problem(batch[1], expect)
    if expect.task == "segmentation":
        return _masks_problem(batch[1], expect)
    return _heads_problem(batch[1], expect)


def summary(batch: Batch) -> dict[str, Any]:
    """What the first batch was, for the row: shape, dtype, value range, labels seen."""
    images, labels = batch[0], batch[1]
    if isinstance(images, list | tuple):
        arrays = [as_numpy(im) for im in images]
        shapes = sorted({tuple(int(n) for n in a.shape) for a in arrays})
        dtype = ",".join(sorted({str(a.dtype) for a in arrays}))
        low = min(float(a.min()) for a in arrays) if arrays else None
        high = max(float(a.max()) for a in arrays) if arrays else None
        out: dict[str, Any] = {"shapes": [list(s) for s in shapes[:4]], "dtype": dtype}
    else:
        array = as_numpy(images)
        low, high = float(array.min()), float(array.max())
        out = {"shape": [int(n) for n in array.shape], "dtype": str(array.dtype)}
    targets = as_numpy(labels)
    if targets.ndim > 1:  # masks or one-hot heads: their shape, and the values a mask holds
        out |= {"min": low, "max": high, "labels_shape": [int(n) for n in targets.shape]}
        if targets.dtype.kind in "iu":
            out["mask_classes"] = [int(v) for v in np.unique(targets)]
        return out
    out |= {"min": low, "max": high, "labels": sorted({int(v) for v in targets.ravel()})}
    return out
