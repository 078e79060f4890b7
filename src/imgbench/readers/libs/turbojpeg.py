"""PyTurboJPEG (< 2, for Debian's libjpeg-turbo 2.1): ``decode(pixel_format=TJPF_RGB)``.

Its default pixel format is BGR: asking for RGB is part of the contract. ``reduced`` passes
``scaling_factor=(1, reduce)``. Needs the system library (Debian ``libturbojpeg0``).
PyTurboJPEG reports libjpeg warnings (e.g. a truncated file) as Python warnings and returns the
partial image; the adapter turns those warnings into errors, so a broken file is an error.

Crop-aware decode (``imgbench.loaders.crop_decode``) uses ``header``, ``crop_region`` and
``decode_scaled``: libjpeg-turbo 2.1's TurboJPEG API has no partial decompress (``tj3``'s
cropping region is 3.0), so a region is a lossless crop (``tjTransform``) to the smallest
MCU-aligned region holding the window, whose smaller JPEG is then decoded.
"""

from __future__ import annotations

import warnings

import numpy as np
from turbojpeg import TJPF_RGB, TurboJPEG, tjMCUHeight, tjMCUWidth

from imgbench.readers.base import BytesReader


class TurboJPEGReader(BytesReader):
    def __init__(self) -> None:
        self._turbo = TurboJPEG()  # raises when libturbojpeg is missing: the case is skipped
        # installed per reader (pytest resets warning filters per test); only turbojpeg's own
        warnings.filterwarnings("error", category=UserWarning, module="turbojpeg")

    def decode(self, data: bytes) -> np.ndarray:
        return self._turbo.decode(data, pixel_format=TJPF_RGB)

    def header(self, data: bytes) -> tuple[int, int, int]:
        """(width, height, chroma subsampling) from the JPEG's header; nothing decoded."""
        width, height, subsample, _ = self._turbo.decode_header(data)
        return int(width), int(height), int(subsample)

    def crop_region(
        self,
        data: bytes,
        box: tuple[int, int, int, int],
        header: tuple[int, int, int] | None = None,
    ) -> tuple[bytes, int, int]:
        """A lossless crop to the smallest MCU-aligned region holding ``box`` (left, top,
        width, height) and that region's top-left corner in the image; the data itself when the
        region is the whole image. ``crop_multiple``, not ``crop``: PyTurboJPEG 1.8's ``crop``
        clamps a region to the last whole MCU, losing the partial MCUs of the right and bottom
        edges; ``copynone``: no EXIF or ICC marker copied (no reader applies them)."""
        left, top, width, height = box
        full_w, full_h, subsample = header or self.header(data)
        x, y = left - left % tjMCUWidth[subsample], top - top % tjMCUHeight[subsample]
        right, bottom = left + width, top + height
        if (x, y, right, bottom) == (0, 0, full_w, full_h):
            return data, 0, 0
        (cropped,) = self._turbo.crop_multiple(data, [(x, y, right - x, bottom - y)], copynone=True)
        return cropped, x, y

    def decode_scaled(self, data: bytes, reduce: int = 1) -> np.ndarray:
        """The image at 1/``reduce`` of each side (libjpeg's DCT scaling; 1: ``decode``)."""
        if reduce == 1:
            return self.decode(data)
        return self._turbo.decode(data, pixel_format=TJPF_RGB, scaling_factor=(1, reduce))


class TurboJPEGReduced(TurboJPEGReader):
    def __init__(self, reduce: int) -> None:
        super().__init__()
        self._scale = (1, reduce)
        if self._scale not in self._turbo.scaling_factors:
            raise ValueError(f"libturbojpeg has no 1/{reduce} scaling factor")

    def decode(self, data: bytes) -> np.ndarray:
        return self._turbo.decode(data, pixel_format=TJPF_RGB, scaling_factor=self._scale)
