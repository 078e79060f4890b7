"""What a segmentation mask is: class indices, or colours of one table; a mask pairs one image.

Data, not augmentation: the dataset's scan pairs images with masks and checks them
(``datasets.pairs``), the synthetic generator paints them (``datasets.pairs_synth``), and the
segmentation recipes read them (``augment.tasks``).
"""

from __future__ import annotations

import numpy as np

# the colour table: class index -> RGB (PASCAL VOC's palette, first 8 classes)
COLOURS: tuple[tuple[int, int, int], ...] = (
    (0, 0, 0),
    (128, 0, 0),
    (0, 128, 0),
    (128, 128, 0),
    (0, 0, 128),
    (128, 0, 128),
    (0, 128, 128),
    (128, 128, 128),
)
N_CLASSES = len(COLOURS)


class MaskError(ValueError):
    """A mask that cannot be paired with its image: one line naming the file and the problem."""


def mask_indices(
    mask: np.ndarray, name: str, colours: tuple[tuple[int, int, int], ...] = COLOURS
) -> np.ndarray:
    """A decoded mask as HxW uint8 class indices: palette/grey masks are indices already,
    RGB masks go through the colour table; a colour not in it is an error naming it."""
    if mask.ndim == 2:
        if int(mask.max(initial=0)) >= len(colours):
            bad = sorted(int(v) for v in np.unique(mask[mask >= len(colours)]))[:5]
            raise MaskError(
                f"{name}: class index {bad} not in the colour table ({len(colours)} classes)"
            )
        return np.ascontiguousarray(mask.astype(np.uint8))
    rgb = mask[..., :3].astype(np.uint32)
    code = (rgb[..., 0] << 16) | (rgb[..., 1] << 8) | rgb[..., 2]
    table = np.array([(r << 16) | (g << 8) | b for r, g, b in colours], dtype=np.uint32)
    order = np.argsort(table)
    pos = np.searchsorted(table[order], code)
    pos = np.minimum(pos, len(table) - 1)
    found = table[order][pos] == code
    if not found.all():
        missing = np.unique(code[~found])[:3]
        names = ", ".join(f"({c >> 16}, {(c >> 8) & 255}, {c & 255})" for c in missing.tolist())
        raise MaskError(f"{name}: colour {names} not in the colour table")
    return np.ascontiguousarray(order[pos].astype(np.uint8))


def check_pair(image: np.ndarray, mask: np.ndarray, image_name: str, mask_name: str) -> None:
    """A mask must have its image's size: one line naming both files when it does not."""
    if image.shape[:2] != mask.shape[:2]:
        raise MaskError(
            f"{mask_name}: mask is {mask.shape[1]}x{mask.shape[0]}, its image {image_name} is "
            f"{image.shape[1]}x{image.shape[0]}"
        )
