"""Pillow (and pillow-simd, the same code in its own venv).

``open-convert``: ``Image.open`` + the policy conversion + ``np.asarray``; inside a loader whose
augmentation takes PIL images it hands over the PIL image itself (``decode_native``:
``Image.open(...).convert("RGB")``, as torchvision's ``ImageFolder`` loads). ``draft``: the JPEG
decoder's DCT scaling (``Image.draft``). ``resize-bilinear``: full decode, then Pillow's
``resize(BILINEAR)``, which widens its filter when downscaling (antialiased), the baseline.
"""

from __future__ import annotations

import io

import numpy as np
from PIL import Image

from imgbench.readers.base import BytesReader
from imgbench.readers.pixels import reduced_size, to_rgb8

_SIXTEEN_BIT = ("I;16", "I;16B", "I;16L", "I;16N", "I")


def pil_to_rgb8(image: Image.Image) -> np.ndarray:
    """The pixel policy on a Pillow image (Pillow's ``convert`` clips 16-bit gray, so not it)."""
    if image.mode == "RGB":
        return np.asarray(image)
    if image.mode in _SIXTEEN_BIT:
        return to_rgb8(np.asarray(image).clip(0, 65535).astype(np.uint16))
    if image.mode in ("RGBA", "RGBX", "RGBa", "LA", "La", "PA"):
        # alpha dropped, colour as stored (convert would keep colour too; this skips a pass)
        image = image.convert("RGBA") if image.mode == "PA" else image
        return to_rgb8(np.asarray(image))
    if image.mode not in ("L", "P", "1", "CMYK", "YCbCr", "LAB", "HSV"):
        raise ValueError(f"unsupported Pillow mode {image.mode}")
    return np.asarray(image.convert("RGB"))


# modes whose ``convert("RGB")`` gives the pixel policy's pixels (checked in the tests); 16-bit
# gray clips, premultiplied alpha is unpremultiplied, La has no conversion: those go through it
_CONVERT_IS_POLICY = frozenset(
    {"RGB", "RGBA", "RGBX", "LA", "PA", "L", "P", "1", "CMYK", "YCbCr", "LAB", "HSV"}
)


def pil_to_rgb_image(image: Image.Image) -> Image.Image:
    """The pixel policy on a Pillow image, kept a Pillow image: ``convert("RGB")`` (what
    ``ImageFolder``'s loader calls) for the modes where that is the policy."""
    if image.mode in _CONVERT_IS_POLICY:
        return image.convert("RGB")
    return Image.fromarray(pil_to_rgb8(image))


class PillowReader(BytesReader):
    native = "pil"  # decode_native hands over the PIL image (readers.base.NativeReader)

    def decode(self, data: bytes) -> np.ndarray:
        with Image.open(io.BytesIO(data)) as image:
            return pil_to_rgb8(image)

    def decode_native(self, data: bytes) -> Image.Image:
        """``Image.open(f).convert("RGB")``: the image a PIL augmentation pipeline takes."""
        with Image.open(io.BytesIO(data)) as image:
            return pil_to_rgb_image(image)

    def read(self, path: str) -> np.ndarray:
        with Image.open(path) as image:
            return pil_to_rgb8(image)


class PillowDraft(BytesReader):
    """JPEG DCT-domain downscale to 1/reduce of each side, then the policy conversion."""

    def __init__(self, reduce: int) -> None:
        self.reduce = reduce

    def _load(self, image: Image.Image) -> np.ndarray:
        # draft picks the largest scale s with width // s >= requested (floor division), so
        # asking for width // reduce selects exactly 1/reduce, whose output is ceil(width/reduce)
        width, height = image.size
        image.draft("RGB", (max(1, width // self.reduce), max(1, height // self.reduce)))
        return pil_to_rgb8(image)

    def decode(self, data: bytes) -> np.ndarray:
        with Image.open(io.BytesIO(data)) as image:
            return self._load(image)

    def read(self, path: str) -> np.ndarray:
        with Image.open(path) as image:
            return self._load(image)


class PillowResize(BytesReader):
    """Full decode, then ``resize(BILINEAR)`` (antialiased) to the size a 1/reduce decode gives."""

    def __init__(self, reduce: int) -> None:
        self.reduce = reduce

    def _load(self, image: Image.Image) -> np.ndarray:
        full = Image.fromarray(pil_to_rgb8(image))
        size = reduced_size(full.width, full.height, self.reduce)
        return np.asarray(full.resize(size, Image.Resampling.BILINEAR))

    def decode(self, data: bytes) -> np.ndarray:
        with Image.open(io.BytesIO(data)) as image:
            return self._load(image)

    def read(self, path: str) -> np.ndarray:
        with Image.open(path) as image:
            return self._load(image)
