"""Real photos for format tests: skimage.data images that ship with the package (no network)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image

PHOTOS = (
    "astronaut",
    "chelsea",
    "coffee",
    "rocket",
    "camera",
    "hubble_deep_field",
    "immunohistochemistry",
    "moon",
    "retina",
    "brick",
    "grass",
    "page",
)


def save_photos(root: Path) -> Path:
    """About a dozen real photos (JPEG q90, some PNG, colour and grey) in three class folders."""
    import skimage.data

    written = 0
    for i, name in enumerate(PHOTOS):
        try:
            pixels = getattr(skimage.data, name)()
        except Exception:  # a sample that would need the network
            continue
        image = Image.fromarray(np.asarray(pixels, dtype=np.uint8))
        folder = root / f"class_{i % 3}"
        folder.mkdir(parents=True, exist_ok=True)
        image.save(folder / f"{name}.jpg", quality=90)
        if i % 4 == 0:  # some PNGs too: formats must not care about the codec
            image.save(folder / f"{name}.png")
        written += 1
    assert written >= 8, "too few skimage sample photos load offline"
    return root


def photo_count(photo_dir: Path) -> int:
    """The photos in a folder; not the manifest cache a scan writes there
    (``.imgbench-manifest.parquet``: counting it made the expected count one too many)."""
    return len([p for p in photo_dir.rglob("*") if p.is_file() and not p.name.startswith(".")])
