"""TorchCodec's image decoders on CPU (``decode_image``, ``decode_jpeg``): torchvision 0.29
deprecates its own image decoders in favour of these.

Asks for ``mode="RGB"`` (alpha dropped, gray replicated). ``decode_image`` uses
``output_dtype="auto"`` so a 16-bit PNG comes back as uint16 and takes the policy's high byte
(its uint8 output would rescale instead). The CHW tensor becomes an HWC array with
``permute(...).contiguous()``, a copy that is part of the timing, as for torchvision. EXIF
orientation **is** applied: TorchCodec always applies it (no option), so verification flags an
EXIF-rotated file and it is left out of the timing.
"""

from __future__ import annotations

import warnings

import numpy as np
import torch
from torchcodec.decoders import decode_image, decode_jpeg

from imgbench.readers.base import BytesReader
from imgbench.readers.pixels import to_rgb8

# bytes are read-only; torch warns once that it cannot write to them, and it never does.
warnings.filterwarnings("ignore", message="The given buffer is not writable", category=UserWarning)


def _tensor(data: bytes) -> torch.Tensor:
    if not data:  # torch.frombuffer's own message ("count (-1)") does not say the input is empty
        raise ValueError("empty input (0 bytes)")
    return torch.frombuffer(data, dtype=torch.uint8)


def _hwc(chw: torch.Tensor) -> np.ndarray:
    if chw.ndim != 3:  # an animated WebP comes back NCHW: not one image
        raise ValueError(f"decoded to shape {tuple(chw.shape)}, not one CHW image")
    array = chw.permute(1, 2, 0).contiguous().numpy()
    return array if array.dtype == np.uint8 else to_rgb8(array)


class DecodeImage(BytesReader):
    def decode(self, data: bytes) -> np.ndarray:
        return _hwc(decode_image(_tensor(data), mode="RGB", output_dtype="auto"))


class DecodeJpeg(BytesReader):
    def decode(self, data: bytes) -> np.ndarray:
        image = decode_jpeg(_tensor(data), mode="RGB")
        assert isinstance(image, torch.Tensor)  # one source in, one tensor out
        return _hwc(image)
