"""simplejpeg (libjpeg-turbo): ``decode_jpeg(colorspace="RGB")``; reduced via ``min_factor``.

``reduced`` asks for the header first (``decode_jpeg_header``, inside the timing), then for the
1/reduce scale with ``min_factor=reduce`` and the matching minimum size, which selects exactly
libjpeg's 1/reduce scale.
"""

from __future__ import annotations

import numpy as np
import simplejpeg

from imgbench.readers.base import BytesReader
from imgbench.readers.pixels import reduced_size


class SimplejpegReader(BytesReader):
    def decode(self, data: bytes) -> np.ndarray:
        return simplejpeg.decode_jpeg(data, colorspace="RGB")


class SimplejpegReduced(BytesReader):
    def __init__(self, reduce: int) -> None:
        self.reduce = reduce

    def decode(self, data: bytes) -> np.ndarray:
        height, width, _, _ = simplejpeg.decode_jpeg_header(data)
        min_width, min_height = reduced_size(width, height, self.reduce)
        return simplejpeg.decode_jpeg(
            data,
            colorspace="RGB",
            min_width=min_width,
            min_height=min_height,
            min_factor=self.reduce,
        )
