"""scikit-image: ``skimage.io.imread`` (a thin layer over imageio), then the policy."""

from __future__ import annotations

import io

import numpy as np
import skimage.io

from imgbench.readers.base import BytesReader
from imgbench.readers.pixels import reject_cmyk_jpeg, to_rgb8


class SkimageReader(BytesReader):
    def decode(self, data: bytes) -> np.ndarray:
        array = skimage.io.imread(io.BytesIO(data))
        reject_cmyk_jpeg(array, data[:3] == b"\xff\xd8\xff", "skimage")
        return to_rgb8(_first_frame(array))

    def read(self, path: str) -> np.ndarray:
        array = skimage.io.imread(path)
        reject_cmyk_jpeg(array, path.lower().endswith((".jpg", ".jpeg")), "skimage")
        return to_rgb8(_first_frame(array))


def _first_frame(array: np.ndarray) -> np.ndarray:
    """Multi-page TIFFs come back as a stack; the policy reads the first page."""
    return array[0] if array.ndim == 4 else array
