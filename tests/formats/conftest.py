"""Real photos for format tests: skimage.data images that ship with the package (no network)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.formats.photos import save_photos


@pytest.fixture(scope="session")
def photo_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """About a dozen real photos (JPEG q90, some PNG, colour and grey) in three class folders."""
    root = tmp_path_factory.mktemp("photos")
    return save_photos(root)


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
