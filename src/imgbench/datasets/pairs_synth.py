"""Synthetic segmentation pairs: a photo-like image and its class mask, drawn together.

Objects are large filled shapes (rectangles, ellipses, polygons) of the colour table's classes
over a background, each with its own colour and texture in the image, so their edges survive a
random resized crop and a wrong mask (shifted, flipped alone, resized with a smoothing filter)
shows up as pixels of the wrong class.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

from imgbench.datasets.masks import COLOURS, N_CLASSES


def draw_pair(width: int, height: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(HxWx3 uint8 image, HxW uint8 class indices) of one synthetic scene."""
    mask = Image.new("L", (width, height), 0)
    draw = ImageDraw.Draw(mask)
    for _ in range(int(rng.integers(3, 8))):
        cls = int(rng.integers(1, N_CLASSES))
        w = int(rng.integers(width // 6, width // 2 + 1))
        h = int(rng.integers(height // 6, height // 2 + 1))
        x = int(rng.integers(0, max(1, width - w)))
        y = int(rng.integers(0, max(1, height - h)))
        shape = int(rng.integers(0, 3))
        if shape == 0:
            draw.rectangle((x, y, x + w, y + h), fill=cls)
        elif shape == 1:
            draw.ellipse((x, y, x + w, y + h), fill=cls)
        else:
            points = [(x + int(rng.integers(0, w)), y + int(rng.integers(0, h))) for _ in range(5)]
            draw.polygon(points, fill=cls)
    classes = np.asarray(mask, dtype=np.uint8)
    base = rng.integers(30, 226, size=(N_CLASSES, 3)).astype(np.float32)
    yy, xx = np.mgrid[0:height, 0:width].astype(np.float32)
    shade = (np.sin(xx / rng.uniform(8, 40)) + np.cos(yy / rng.uniform(8, 40))) * 12
    noise = rng.normal(0, 8, size=(height, width, 3)).astype(np.float32)
    image = base[classes] + shade[..., None] + noise
    return np.clip(image, 0, 255).astype(np.uint8), classes


def colour_mask(classes: np.ndarray) -> np.ndarray:
    """HxW class indices -> HxWx3 RGB through the colour table."""
    return np.asarray(COLOURS, dtype=np.uint8)[classes]


def palette_image(classes: np.ndarray) -> Image.Image:
    """A mode-P PNG-ready image whose palette is the colour table (as VOC ships its masks)."""
    image = Image.fromarray(classes, mode="L").convert("P")
    flat = [v for colour in COLOURS for v in colour]
    image.putpalette(flat + [0] * (768 - len(flat)))
    return image


def generate_pairs(
    out: Path,
    n: int,
    *,
    size: tuple[int, int] = (500, 375),
    codec: str = "jpeg",
    quality: int = 90,
    masks: str = "palette",
    seed: int = 0,
) -> None:
    """``out/images/NNNNN.jpg|png`` and ``out/masks/NNNNN.png`` (palette or RGB colours)."""
    if codec not in ("jpeg", "png"):
        raise ValueError(f"segmentation images are jpeg or png, not {codec}")
    if masks not in ("palette", "rgb"):
        raise ValueError(f"masks are palette or rgb, not {masks}")
    rng = np.random.default_rng(seed)
    (out / "images").mkdir(parents=True, exist_ok=True)
    (out / "masks").mkdir(parents=True, exist_ok=True)
    for i in range(n):
        image, classes = draw_pair(*size, rng)
        picture = Image.fromarray(image, mode="RGB")
        if codec == "jpeg":
            picture.save(out / "images" / f"{i:05d}.jpg", quality=quality)
        else:
            picture.save(out / "images" / f"{i:05d}.png")
        mask = (
            palette_image(classes) if masks == "palette" else Image.fromarray(colour_mask(classes))
        )
        mask.save(out / "masks" / f"{i:05d}.png")
