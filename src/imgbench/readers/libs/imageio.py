"""imageio v3: ``imageio.v3.imread`` on the bytes (or the path), first frame, then the policy.

imageio picks the plugin itself (Pillow for most codecs, tifffile for TIFF). It returns CMYK
JPEGs as four CMYK channels, which the policy cannot tell from RGBA: that is a per-file error.
"""

from __future__ import annotations

import imageio.v3 as iio
import numpy as np

from imgbench.readers.base import BytesReader
from imgbench.readers.pixels import reject_cmyk_jpeg, to_rgb8


class ImageioReader(BytesReader):
    def decode(self, data: bytes) -> np.ndarray:
        array = iio.imread(data, index=0)
        reject_cmyk_jpeg(array, data[:3] == b"\xff\xd8\xff", "imageio")
        return to_rgb8(array)

    def read(self, path: str) -> np.ndarray:
        array = iio.imread(path, index=0)
        reject_cmyk_jpeg(array, path.lower().endswith((".jpg", ".jpeg")), "imageio")
        return to_rgb8(array)
