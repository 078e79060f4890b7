"""The pixel policies every reader applies, in one place (see docs/readers.md).

- EXIF orientation: not applied; pixels come back as stored.
- Grayscale: replicated to three channels.
- Alpha: dropped (the colour channels as stored, no compositing on a background).
- Palette: expanded to RGB through the palette.
- 16 bits per sample: the high byte (``value >> 8``), as libpng's ``strip_16`` and OpenCV do.
- CMYK: the decoding library's own CMYK to RGB conversion, or a per-file error if it has none.

Adapters whose library can be asked for RGB do so; the others pass their array through
``to_rgb8``, inside the timing, so every reader pays for the same result.
"""

from __future__ import annotations

import numpy as np


def to_rgb8(array: np.ndarray) -> np.ndarray:
    """Any HxW, HxWx1..4 uint8/uint16 array to a C-contiguous HxWx3 uint8 RGB array."""
    if array.dtype == np.uint16:
        array = (array >> 8).astype(np.uint8)
    elif array.dtype == np.bool_:
        array = array.astype(np.uint8) * 255
    elif array.dtype != np.uint8:
        raise ValueError(f"unsupported sample type {array.dtype} (expected 8 or 16 bit)")
    if array.ndim == 2:
        array = array[:, :, None]
    if array.ndim != 3:
        raise ValueError(f"unsupported array shape {array.shape}")
    channels = array.shape[2]
    if channels in (1, 2):  # gray, gray + alpha
        array = np.repeat(array[:, :, :1], 3, axis=2)
    elif channels == 4:  # RGBA: alpha dropped
        array = array[:, :, :3]
    elif channels != 3:
        raise ValueError(f"unsupported channel count {channels}")
    return np.ascontiguousarray(array)


def reduced_size(width: int, height: int, reduce: int) -> tuple[int, int]:
    """Output (width, height) of a 1/reduce decode: libjpeg's scaled IDCT rounds up."""
    return -(-width // reduce), -(-height // reduce)


def reject_cmyk_jpeg(array: np.ndarray, is_jpeg: bool, library: str) -> None:
    """A 4-channel array from a JPEG is CMYK, not RGBA: dropping a channel would be wrong."""
    if is_jpeg and array.ndim == 3 and array.shape[2] == 4:
        raise ValueError(f"CMYK JPEG: {library} returns CMYK samples and no RGB conversion")


def sniff_codec(data: bytes) -> str:
    """Codec from the first bytes; ValueError for anything imgbench does not bench."""
    if data[:3] == b"\xff\xd8\xff":
        return "jpeg"
    if data[:8] == b"\x89PNG\r\n\x1a\n":
        return "png"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "webp"
    if data[:2] == b"BM":
        return "bmp"
    if data[:4] in (b"II*\x00", b"MM\x00*"):
        return "tiff"
    raise ValueError("not a JPEG, PNG, WebP, BMP or TIFF file")
