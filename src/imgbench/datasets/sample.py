"""The real sample: photos that ship inside installed packages, so benches run offline on real data.

No package ships more than a handful of real photos, and most sample-image helpers download at
run time; scikit-image's bundled images and scikit-learn's two sample photos are on disk. They
are re-encoded with fixed settings into a few sizes, qualities and codecs, deterministically.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
from PIL import Image

from imgbench.atomic import atomic_folder

# Bump when the plan below changes: recipes built with older code are rebuilt.
VERSION = 2

# Natural colour photographs: the reference for "what real photos compress like".
NATURAL = ("astronaut", "chelsea", "coffee", "rocket")
SKLEARN = ("china", "flower")
GRAY = ("camera", "moon", "coins", "clock", "grass", "gravel", "brick")
SCIENCE = ("hubble_deep_field", "immunohistochemistry", "retina")


def _skimage(name: str) -> np.ndarray:
    import skimage.data

    return np.asarray(getattr(skimage.data, name)())


def _sklearn(name: str) -> np.ndarray:
    from sklearn.datasets import load_sample_image

    return np.asarray(load_sample_image(f"{name}.jpg"))


def natural_photos() -> dict[str, np.ndarray]:
    """The natural colour photos (RGB uint8) at their native sizes."""
    return {name: load_source(name) for name in NATURAL + SKLEARN}


def _resize_long_edge(pixels: np.ndarray, long_edge: int) -> np.ndarray:
    image = Image.fromarray(pixels)
    scale = long_edge / max(image.size)
    size = (max(1, round(image.width * scale)), max(1, round(image.height * scale)))
    return np.asarray(image.resize(size, Image.Resampling.LANCZOS))


def _save(pixels: np.ndarray, path: Path, codec: str, quality: int = 90) -> None:
    image = Image.fromarray(pixels)
    buffer = io.BytesIO()
    if codec == "jpeg":
        image.save(buffer, "JPEG", quality=quality, subsampling=2 if image.mode == "RGB" else 0)
    elif codec == "png":
        image.save(buffer, "PNG", compress_level=6)
    elif codec == "bmp":
        image.save(buffer, "BMP")
    elif codec == "tiff":
        image.save(buffer, "TIFF", compression="tiff_adobe_deflate")
    else:
        image.save(buffer, "WEBP", quality=quality, method=4)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(buffer.getvalue())


def load_source(name: str) -> np.ndarray:
    """Pixels of one bundled photo, by name (uint8; gray ones are 2-D)."""
    pixels = _sklearn(name) if name in SKLEARN else _skimage(name)
    if pixels.dtype == bool:
        pixels = pixels.astype(np.uint8) * 255
    return pixels


def plan() -> list[tuple[str, str, str, int, int | None]]:
    """(relative path, source photo, codec, quality, long edge or None for native size)."""
    rows: list[tuple[str, str, str, int, int | None]] = []
    for name in NATURAL + SKLEARN:
        rows.append((f"natural/{name}_q90.jpg", name, "jpeg", 90, None))
        rows.append((f"natural/{name}_q75.jpg", name, "jpeg", 75, None))
        rows.append((f"natural/{name}_q95.jpg", name, "jpeg", 95, None))
        rows.append((f"natural/{name}_256_q90.jpg", name, "jpeg", 90, 256))
    for name in ("astronaut", "coffee", "china"):
        rows.append((f"natural/{name}.png", name, "png", 0, None))
        rows.append((f"natural/{name}_q90.webp", name, "webp", 90, None))
    for name in ("astronaut", "rocket"):
        rows.append((f"natural/{name}.bmp", name, "bmp", 0, None))
        rows.append((f"natural/{name}.tif", name, "tiff", 0, None))
    rows += [(f"gray/{name}_q90.jpg", name, "jpeg", 90, None) for name in GRAY]
    rows += [(f"science/{name}_q90.jpg", name, "jpeg", 90, None) for name in SCIENCE]
    return rows


def build(out: Path) -> Path:
    """Write the sample into ``out`` (ImageFolder: natural/, gray/, science/); atomic."""
    out = Path(out)
    with atomic_folder(out) as staging:
        sources: dict[str, np.ndarray] = {}
        for rel, source, codec, quality, long_edge in plan():
            if source not in sources:
                sources[source] = load_source(source)
            pixels = sources[source]
            if long_edge is not None:
                pixels = _resize_long_edge(pixels, long_edge)
            _save(pixels, staging / rel, codec, quality)
    return out
