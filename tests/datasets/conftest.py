"""Folders several dataset test modules read."""

from __future__ import annotations

from pathlib import Path

import pytest

from imgbench.datasets.synth import generate


@pytest.fixture(scope="package")
def imagenet_like(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The default recipe's generator, smaller: 96 images with ImageNet-like sizes, 4 classes
    (generated once: about 60 ms of CPU per image). Read-only: copy what a test changes."""
    root = tmp_path_factory.mktemp("imagenet-like") / "set"
    return generate(root, 96, sizes="imagenet", classes=4, workers=1, progress=False)
