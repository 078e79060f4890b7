"""Write the machine reference's bundled images (``src/imgbench/measure/reference_images/``).

Run once; the files are committed, so every machine decodes the same bytes and the reference's
version string (``imgbench.measure.reference.workload_version``, a hash of them) only changes
when they do. Four baseline JPEGs at 320-640 px of smooth shapes over fine noise: a photo's
mix of flat areas and texture, so a decode costs about what one of a photo that size costs.

    .venv/bin/python lab/make_reference_images.py
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
from PIL import Image

OUT = Path(__file__).resolve().parents[1] / "src" / "imgbench" / "measure" / "reference_images"
SIZES = ((640, 480), (480, 640), (512, 384), (320, 320))  # width, height
QUALITY = 85


def image(width: int, height: int, seed: int) -> np.ndarray:
    """Gradients, a few discs and stripes, and fine noise: seeded, so rerunning rewrites the same."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width].astype(np.float32)
    out = np.empty((height, width, 3), np.float32)
    for c in range(3):
        angle = rng.uniform(0, np.pi)
        out[..., c] = 128 + 90 * np.sin(
            (x * np.cos(angle) + y * np.sin(angle)) / rng.uniform(40, 120)
        )
    for _ in range(6):
        cx, cy, r = rng.uniform(0, width), rng.uniform(0, height), rng.uniform(20, 90)
        inside = (x - cx) ** 2 + (y - cy) ** 2 < r**2
        out[inside] = rng.uniform(0, 255, 3)
    stripes = (np.sin(x / 3.0 + y / 7.0) > 0.6)[..., None] * rng.uniform(-40, 40, 3)
    out += stripes + rng.normal(0, 8, out.shape)
    return np.clip(out, 0, 255).astype(np.uint8)


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    total = 0
    for index, (width, height) in enumerate(SIZES):
        buffer = io.BytesIO()
        Image.fromarray(image(width, height, seed=index)).save(
            buffer, "JPEG", quality=QUALITY, optimize=False, progressive=False
        )
        path = OUT / f"reference-{index}-{width}x{height}.jpg"
        path.write_bytes(buffer.getvalue())
        total += len(buffer.getvalue())
        print(f"{path.relative_to(OUT.parents[3])}: {len(buffer.getvalue()):,} bytes")
    print(f"total {total:,} bytes")


if __name__ == "__main__":
    main()
