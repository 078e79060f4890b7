"""imagecodecs: the codec's own ``*_decode`` function, chosen from the first bytes, then the policy.

JPEG asks libjpeg-turbo for RGB (``outcolorspace``), so CMYK JPEGs are a per-file error.
``jpeg8_decode`` ignores libjpeg's warnings: a truncated JPEG comes back with its missing rows
filled in, an array the verification flags (the reference decode fails on it).
"""

from __future__ import annotations

from collections.abc import Callable

import imagecodecs
import numpy as np

from imgbench.readers.base import BytesReader
from imgbench.readers.pixels import sniff_codec, to_rgb8


def _jpeg(data: bytes) -> np.ndarray:
    return imagecodecs.jpeg8_decode(data, outcolorspace="RGB")


def _tiff(data: bytes) -> np.ndarray:
    return imagecodecs.tiff_decode(data, index=0)


_DECODERS: dict[str, Callable[[bytes], np.ndarray]] = {
    "jpeg": _jpeg,
    "png": imagecodecs.png_decode,
    "webp": imagecodecs.webp_decode,
    "bmp": imagecodecs.bmp_decode,
    "tiff": _tiff,
}


class ImagecodecsReader(BytesReader):
    def decode(self, data: bytes) -> np.ndarray:
        return to_rgb8(_DECODERS[sniff_codec(data)](data))
