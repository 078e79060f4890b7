"""torchvision.io on CPU (``decode_image``, ``decode_jpeg``) and on CUDA (``decode_jpeg``).

Asks for ``ImageReadMode.RGB`` (alpha dropped, gray replicated); the CHW tensor becomes an HWC
array with ``permute(...).contiguous()``, a copy that is part of the timing. 16-bit PNGs come
back as uint16 and take the policy's high byte. EXIF orientation is not applied (the default).
"""

from __future__ import annotations

import warnings

import numpy as np
import torch
from torchvision.io import ImageReadMode, decode_image, decode_jpeg, read_file

from imgbench.readers.base import BytesReader
from imgbench.readers.pixels import to_rgb8

# bytes are read-only; torch warns once that it cannot write to them, and it never does.
warnings.filterwarnings("ignore", message="The given buffer is not writable", category=UserWarning)


def _tensor(data: bytes) -> torch.Tensor:
    return torch.frombuffer(data, dtype=torch.uint8)


def _hwc(chw: torch.Tensor) -> np.ndarray:
    array = chw.permute(1, 2, 0).contiguous().numpy()
    return array if array.dtype == np.uint8 else to_rgb8(array)


class DecodeImage(BytesReader):
    def decode(self, data: bytes) -> np.ndarray:
        return _hwc(decode_image(_tensor(data), mode=ImageReadMode.RGB))

    def read(self, path: str) -> np.ndarray:
        return _hwc(decode_image(read_file(path), mode=ImageReadMode.RGB))


class DecodeJpeg(BytesReader):
    def decode(self, data: bytes) -> np.ndarray:
        return _hwc(decode_jpeg(_tensor(data), mode=ImageReadMode.RGB))

    def read(self, path: str) -> np.ndarray:
        return _hwc(decode_jpeg(read_file(path), mode=ImageReadMode.RGB))


class DecodeJpegCuda(BytesReader):
    """nvjpeg on the GPU; the copy back to host memory is timed, as the contract asks."""

    def __init__(self) -> None:
        if not torch.cuda.is_available():
            raise RuntimeError("CUDA is not available (torch.cuda.is_available() is False)")

    def decode(self, data: bytes) -> np.ndarray:
        image = decode_jpeg(_tensor(data), mode=ImageReadMode.RGB, device="cuda")
        return _hwc(image.cpu())
