"""Real photos (skimage.data ships them offline) and a harness context to build loaders from."""

from __future__ import annotations

from pathlib import Path

import pytest

from imgbench.measure.context import CaseContext
from imgbench.profiles import get_profile
from tests.shared_runs import write_photos


@pytest.fixture(scope="session")
def photo_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Sixteen JPEGs of real photos (q90, 320x240 and 240x320) in two class folders."""
    return write_photos(tmp_path_factory.mktemp("loader-photos"))


def make_context(root: Path, profile: str = "quick", max_images: int = 16) -> CaseContext:
    from imgbench.datasets import load_dataset

    return CaseContext.of(load_dataset(str(root)), get_profile(profile), max_images=max_images)


@pytest.fixture
def photo_ctx(photo_dir: Path) -> CaseContext:
    return make_context(photo_dir)


@pytest.fixture(scope="session")
def photo_dir_48(tmp_path_factory: pytest.TempPathFactory, photo_dir: Path) -> Path:
    """The sixteen photos three times over: enough for the default profile's batches of 32."""
    import shutil

    root = tmp_path_factory.mktemp("loader-photos-48")
    for copy in range(3):
        for path in photo_dir.rglob("*.jpg"):
            target = root / path.parent.name / f"{path.stem}-{copy}.jpg"
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
    return root
