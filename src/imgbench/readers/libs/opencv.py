"""OpenCV: ``imdecode``/``imread`` asking for RGB directly, and the common BGR + ``cvtColor``.

``IMREAD_IGNORE_ORIENTATION`` keeps pixels as stored, the policy every reader follows; without
``IMREAD_ANYDEPTH`` 16-bit images come back as their high byte, alpha is dropped and gray is
replicated, which is the policy too. ``reduced`` uses ``IMREAD_REDUCED_COLOR_2/4/8`` (libjpeg's
DCT scaling for JPEG); ``resize-area`` is the full decode + ``cv2.resize(INTER_AREA)``, the
antialiased baseline (``INTER_LINEAR`` does not antialias when downscaling).
"""

from __future__ import annotations

import cv2
import numpy as np

from imgbench.readers.base import BytesReader
from imgbench.readers.pixels import reduced_size

_RGB_FLAG = getattr(cv2, "IMREAD_COLOR_RGB", None)
_REDUCED = {
    2: cv2.IMREAD_REDUCED_COLOR_2,
    4: cv2.IMREAD_REDUCED_COLOR_4,
    8: cv2.IMREAD_REDUCED_COLOR_8,
}


def _rgb_flags() -> int:
    if _RGB_FLAG is None:
        raise RuntimeError(f"OpenCV {cv2.__version__} has no IMREAD_COLOR_RGB (needs >= 4.10)")
    return _RGB_FLAG | cv2.IMREAD_IGNORE_ORIENTATION


def _checked(array: np.ndarray | None, call: str) -> np.ndarray:
    if array is None:
        raise ValueError(f"cv2.{call} could not decode the data")
    return array


class ImdecodeRGB(BytesReader):
    """One call: the decoder writes RGB itself (OpenCV >= 4.10); ``imread`` from a path."""

    def __init__(self) -> None:
        self._flags = _rgb_flags()

    def decode(self, data: bytes) -> np.ndarray:
        return _checked(cv2.imdecode(np.frombuffer(data, np.uint8), self._flags), "imdecode")

    def read(self, path: str) -> np.ndarray:
        return _checked(cv2.imread(path, self._flags), "imread")


class ImdecodeCvtColor(BytesReader):
    """What most code does: decode to BGR, then convert (the conversion is timed)."""

    _flags = cv2.IMREAD_COLOR | cv2.IMREAD_IGNORE_ORIENTATION

    def decode(self, data: bytes) -> np.ndarray:
        bgr = _checked(cv2.imdecode(np.frombuffer(data, np.uint8), self._flags), "imdecode")
        return cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)

    def read(self, path: str) -> np.ndarray:
        return cv2.cvtColor(_checked(cv2.imread(path, self._flags), "imread"), cv2.COLOR_BGR2RGB)


class ImdecodeReduced(BytesReader):
    """``IMREAD_REDUCED_COLOR_<reduce>`` with the RGB flag instead of the BGR one."""

    def __init__(self, reduce: int) -> None:
        if reduce not in _REDUCED:
            raise ValueError(f"OpenCV reduces by 2, 4 or 8, not {reduce}")
        self._flags = (_REDUCED[reduce] & ~cv2.IMREAD_COLOR) | _rgb_flags()

    def decode(self, data: bytes) -> np.ndarray:
        return _checked(cv2.imdecode(np.frombuffer(data, np.uint8), self._flags), "imdecode")

    def read(self, path: str) -> np.ndarray:
        return _checked(cv2.imread(path, self._flags), "imread")


class ImdecodeResizeArea(ImdecodeRGB):
    """Full RGB decode, then ``cv2.resize(INTER_AREA)`` to the size a 1/reduce decode gives."""

    def __init__(self, reduce: int) -> None:
        super().__init__()
        self.reduce = reduce

    def _resize(self, full: np.ndarray) -> np.ndarray:
        size = reduced_size(full.shape[1], full.shape[0], self.reduce)
        return cv2.resize(full, size, interpolation=cv2.INTER_AREA)

    def decode(self, data: bytes) -> np.ndarray:
        return self._resize(super().decode(data))

    def read(self, path: str) -> np.ndarray:
        return self._resize(super().read(path))
