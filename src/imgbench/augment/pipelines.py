"""The three pipelines, defined once; every library's adapter builds them from spec.py's values.

All start from a decoded image and end in a contiguous 3x224x224 float32 array or tensor,
ImageNet-normalised, except ``train-uint8``: train-classification without the float conversion,
3x224x224 uint8, for loaders that ship uint8 batches and normalise on the accelerator (timm's
PrefetchLoader, FFCV and DALI do this; it moves a quarter of the bytes between processes).
``train-classification``, ``train-uint8`` and ``heavy`` are random (checked for shape, dtype and
range); ``light`` is deterministic and its libraries must agree within tolerance.
"""

from __future__ import annotations

from dataclasses import dataclass

from imgbench.augment import spec
from imgbench.augment.spec import Tolerance


@dataclass(frozen=True)
class PipelineSpec:
    name: str
    steps: str
    tolerance: Tolerance | None  # None: random, checked for shape/dtype/range


PIPELINES: tuple[PipelineSpec, ...] = (
    PipelineSpec(
        "train-classification",
        f"RandomResizedCrop {spec.SIZE} (scale {spec.RRC_SCALE}, ratio 3/4..4/3) -> "
        f"horizontal flip p={spec.FLIP_P} -> ColorJitter{spec.JITTER} -> ToDtype float -> "
        "Normalize(ImageNet) -> 3xHxW float32",
        None,
    ),
    PipelineSpec(
        "train-uint8",
        f"RandomResizedCrop {spec.SIZE} (scale {spec.RRC_SCALE}, ratio 3/4..4/3) -> "
        f"horizontal flip p={spec.FLIP_P} -> ColorJitter{spec.JITTER} -> 3xHxW uint8 "
        "(Normalize left to the accelerator)",
        None,
    ),
    PipelineSpec(
        "light",
        f"Resize shorter side {spec.RESIZE_SHORT} (antialiased) -> CenterCrop {spec.SIZE} -> "
        "Normalize(ImageNet) -> 3xHxW float32",
        Tolerance(mean_abs=2.0),
    ),
    PipelineSpec(
        "heavy",
        f"train-classification's crop, flip and jitter -> rotation +-{spec.HEAVY_ROTATE_DEG:g} deg "
        f"-> Gaussian blur k={spec.BLUR_KERNEL} sigma {spec.HEAVY_BLUR_SIGMA} -> Normalize -> "
        f"random erasing p={spec.HEAVY_ERASE_P} (value 0 after Normalize) -> 3xHxW float32",
        None,
    ),
)
PIPELINE_BY_NAME = {p.name: p for p in PIPELINES}
OUTPUT_SHAPE = (spec.SIZE, spec.SIZE, 3)  # as read back by base.as_hwc
