"""kornia-rs: ``decode_image_jpegturbo(data, "rgb")`` (libjpeg-turbo inside the wheel).

kornia-rs decodes PNG only with caller-supplied dimensions, so it is benched on JPEG.
"""

from __future__ import annotations

import kornia_rs
import numpy as np

from imgbench.readers.base import BytesReader


class KorniaRsReader(BytesReader):
    def decode(self, data: bytes) -> np.ndarray:
        return kornia_rs.io.decode_image_jpegturbo(data, "rgb")

    def read(self, path: str) -> np.ndarray:
        return kornia_rs.io.read_image_jpegturbo(path)
