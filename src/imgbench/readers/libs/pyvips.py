"""pyvips (libvips): ``new_from_buffer`` / ``new_from_file`` then ``.numpy()``, then the policy.

The operation cache is switched off (a benchmark decoding the same bytes again must not be
served from it) and ``concurrency_set`` follows the case's thread setting. CMYK is converted
with ``colourspace("srgb")`` (libvips uses an ICC profile, so it differs from the naive
conversion of Pillow and OpenCV). ``fail_on="truncated"`` makes a truncated file an error
instead of a partly grey image. ``shrink`` is jpegload's shrink-on-load (libjpeg DCT scaling).
"""

from __future__ import annotations

import numpy as np
import pyvips

from imgbench.readers.base import BytesReader
from imgbench.readers.pixels import to_rgb8

_DEFAULT_CONCURRENCY = pyvips.concurrency_get()
pyvips.cache_set_max(0)


def _to_rgb8(image: pyvips.Image) -> np.ndarray:
    if image.interpretation == "cmyk":
        image = image.colourspace("srgb")
    return to_rgb8(image.numpy())


class PyvipsReader(BytesReader):
    def __init__(self, threads: int | None = None) -> None:
        pyvips.concurrency_set(threads or _DEFAULT_CONCURRENCY)
        self._options: dict[str, int | str] = {"access": "sequential", "fail_on": "truncated"}

    def decode(self, data: bytes) -> np.ndarray:
        image = pyvips.Image.new_from_buffer(data, "", **self._options)
        return _to_rgb8(image)

    def read(self, path: str) -> np.ndarray:
        return _to_rgb8(pyvips.Image.new_from_file(path, **self._options))


class PyvipsShrink(PyvipsReader):
    """JPEG shrink-on-load by an integer factor."""

    def __init__(self, reduce: int, threads: int | None = None) -> None:
        super().__init__(threads)
        self._options["shrink"] = reduce
