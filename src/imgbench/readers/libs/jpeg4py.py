"""jpeg4py (libturbojpeg through ctypes): ``JPEG(buffer).decode()`` returns RGB."""

from __future__ import annotations

import jpeg4py
import numpy as np

from imgbench.readers.base import BytesReader


class Jpeg4pyReader(BytesReader):
    def __init__(self) -> None:
        jpeg4py.JPEG(np.zeros(1, np.uint8))  # loads libturbojpeg: missing -> the case is skipped

    def decode(self, data: bytes) -> np.ndarray:
        return jpeg4py.JPEG(np.frombuffer(data, np.uint8)).decode()

    def read(self, path: str) -> np.ndarray:
        return jpeg4py.JPEG(path).decode()
