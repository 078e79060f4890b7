"""OpenCV ``imdecode``: asking for RGB directly, and the common BGR decode + ``cvtColor``.

``IMREAD_IGNORE_ORIENTATION`` keeps pixels as stored, the policy every reader follows.
"""

from __future__ import annotations

import cv2
import numpy as np

_RGB_FLAG = getattr(cv2, "IMREAD_COLOR_RGB", None)


def _raise_if_none(array: np.ndarray | None) -> np.ndarray:
    if array is None:
        raise ValueError("cv2.imdecode could not decode the data")
    return array


class ImdecodeRGB:
    """One call: the decoder writes RGB itself (OpenCV >= 4.10)."""

    def __init__(self) -> None:
        if _RGB_FLAG is None:
            raise RuntimeError(f"OpenCV {cv2.__version__} has no IMREAD_COLOR_RGB")
        self._flags = _RGB_FLAG | cv2.IMREAD_IGNORE_ORIENTATION

    def decode(self, data: bytes) -> np.ndarray:
        buffer = np.frombuffer(data, dtype=np.uint8)
        return _raise_if_none(cv2.imdecode(buffer, self._flags))


class ImdecodeCvtColor:
    """What most code does: decode to BGR, then convert (the conversion is timed)."""

    _flags = cv2.IMREAD_COLOR | cv2.IMREAD_IGNORE_ORIENTATION

    def decode(self, data: bytes) -> np.ndarray:
        buffer = np.frombuffer(data, dtype=np.uint8)
        bgr = _raise_if_none(cv2.imdecode(buffer, self._flags))
        return cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)
