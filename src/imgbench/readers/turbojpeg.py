"""PyTurboJPEG (< 2, for Debian's libjpeg-turbo 2.1): ``decode(pixel_format=TJPF_RGB)``.

Its default pixel format is BGR: asking for RGB is part of the contract. ``reduced`` passes
``scaling_factor=(1, reduce)``. Needs the system library (Debian ``libturbojpeg0``).
PyTurboJPEG reports libjpeg warnings (e.g. a truncated file) as Python warnings and returns the
partial image; the adapter turns those warnings into errors, so a broken file is an error.
"""

from __future__ import annotations

import warnings

import numpy as np
from turbojpeg import TJPF_RGB, TurboJPEG

from imgbench.readers.base import BytesReader


class TurboJPEGReader(BytesReader):
    def __init__(self) -> None:
        self._turbo = TurboJPEG()  # raises when libturbojpeg is missing: the case is skipped
        # installed per reader (pytest resets warning filters per test); only turbojpeg's own
        warnings.filterwarnings("error", category=UserWarning, module="turbojpeg")

    def decode(self, data: bytes) -> np.ndarray:
        return self._turbo.decode(data, pixel_format=TJPF_RGB)


class TurboJPEGReduced(TurboJPEGReader):
    def __init__(self, reduce: int) -> None:
        super().__init__()
        self._scale = (1, reduce)
        if self._scale not in self._turbo.scaling_factors:
            raise ValueError(f"libturbojpeg has no 1/{reduce} scaling factor")

    def decode(self, data: bytes) -> np.ndarray:
        return self._turbo.decode(data, pixel_format=TJPF_RGB, scaling_factor=self._scale)
