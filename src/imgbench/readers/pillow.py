"""Pillow: ``Image.open`` on a BytesIO, convert to RGB when the file is not, ``np.asarray``."""

from __future__ import annotations

import io

import numpy as np
from PIL import Image


class PillowReader:
    def decode(self, data: bytes) -> np.ndarray:
        with Image.open(io.BytesIO(data)) as image:
            if image.mode != "RGB":
                image = image.convert("RGB")
            return np.asarray(image)
