"""Loaders over files gone bad after the scan: a zero-byte file is named in the loader's error
(the pipeline's SampleError, through whichever worker raised it), a PNG named .jpg decodes by its
content, nothing hangs or survives (SPDL's, DALI's and MXNet's own cases are in their modules)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.loaders.bad_files import BAD_FILES, first_error, folder


@pytest.mark.timeout(180)
@pytest.mark.parametrize(
    ("library", "params"),
    [
        ("torchdata-nodes", {"method": "thread"}),
        ("torchdata-nodes", {"method": "process"}),
        ("prefetch-generator", {}),  # DataLoaderX
        ("torch-dataloader", {}),
        ("threadpool", {}),
    ],
)
def test_a_bad_file_is_named_and_nothing_hangs(
    tmp_path: Path, photo_dir: Path, library: str, params: dict[str, Any]
) -> None:
    for bad in BAD_FILES:
        root = tmp_path / bad.replace(".", "-")
        error = first_error(library, "default", folder(root, photo_dir, bad), params)
        if bad == "empty.jpg":
            assert error is not None and str(root / bad) in error, error
        elif bad == "png_named.jpg":  # decodes by its content, as the dataset scan identifies it
            assert error is None, error
        # a truncated JPEG: OpenCV may return its decodable part (its behaviour, not the loader's)
