"""Real photos for format tests: skimage.data images that ship with the package (no network)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
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


def _save_photos(root: Path) -> None:
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


@pytest.fixture(scope="session")
def photo_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """About a dozen real photos (JPEG q90, some PNG, colour and grey) in three class folders."""
    root = tmp_path_factory.mktemp("photos")
    _save_photos(root)
    return root


@pytest.fixture(scope="session")
def photo_manifest(photo_dir: Path):  # type: ignore[no-untyped-def]
    from imgbench.datasets.scan import scan

    return scan(photo_dir, use_cache=False)


@pytest.fixture
def photo_copy(photo_dir: Path, tmp_path: Path) -> Path:
    """A private copy a test may damage."""
    target = tmp_path / "photos"
    shutil.copytree(photo_dir, target)
    return target
