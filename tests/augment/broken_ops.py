"""An augmentation "library" whose ops are wrong in the ways the output check must catch."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from PIL import Image

from imgbench.augment import spec
from imgbench.augment.base import InputKind, Op, chw_float
from imgbench.augment.registry import AugmentLibrary
from imgbench.augment.spec import Row


def _resize_brighter(image: np.ndarray) -> np.ndarray:
    """Antialiased bilinear, then 4 grey levels brighter: a small, systematic difference."""
    resized = Image.fromarray(image).resize((spec.SIZE, spec.SIZE), Image.Resampling.BILINEAR)
    return np.clip(np.asarray(resized, dtype=np.int16) + 4, 0, 255).astype(np.uint8)


def _light_wrong_shape(image: np.ndarray) -> np.ndarray:
    return chw_float(np.zeros((spec.SIZE, spec.SIZE - 1, 3), dtype=np.float32))


TRANSFORMS: dict[str, Callable[[], Op]] = {
    "hflip": lambda: Op(np.ascontiguousarray, "hwc-uint8"),  # forgets to flip: wrong values
    "vflip": lambda: Op(lambda im: np.ascontiguousarray(im[::-1][1:]), "hwc-uint8"),  # a row short
    "invert": lambda: Op(lambda im: (255 - im).astype(np.float32), "hwc-uint8"),  # float "u8"
    "resize": lambda: Op(_resize_brighter, "hwc-uint8"),
}
PIPELINES: dict[str, Callable[[], Op]] = {
    "light": lambda: Op(_light_wrong_shape, "hwc-uint8", "norm", "chw"),
}


def transforms(input_kind: InputKind) -> dict[str, Callable[[], Op]]:
    return TRANSFORMS


def pipelines(input_kind: InputKind) -> dict[str, Callable[[], Op]]:
    return PIPELINES


LIBRARY = AugmentLibrary(
    library="broken",
    variant="numpy",
    module=__name__,
    input="hwc-uint8",
    pipeline_input="hwc-uint8",
    rows=tuple(Row(name, "broken", "numpy") for name in TRANSFORMS),
    pipeline_names=("light",),
)
