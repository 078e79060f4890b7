"""nvImageCodec on its CPU backend only (``nvidia-nvimgcodec-cu12``): libjpeg-turbo (JPEG),
libtiff, its own BMP parser and a built-in OpenCV (PNG, WebP) behind one ``Decoder``, with its
own thread pool.

``Decoder(device_id=NVIMGCODEC_DEVICE_CPU_ONLY, backends=[Backend(BackendKind.CPU_ONLY)],
max_num_cpu_threads=N)``: the default ``Decoder()`` needs a CUDA driver ("CUDA Runtime failure
#35" without one). Every call asks for ``DecodeParams(color_spec=SRGB, allow_any_depth=False,
apply_exif_orientation=False)``: RGB, 8 bits, orientation as stored, alpha dropped. The host
``Image`` becomes an array with ``np.asarray`` (``ascontiguousarray`` where rows are padded),
inside the timing. A file it cannot decode comes back as ``None`` (the library logs its reason
on stderr); the adapter raises instead, with the parser's reason where it has one.

``threads``: the pool's size (``max_num_cpu_threads``; ``None`` leaves its default, one per
core). One image per call decodes on one thread; a list per call (``decode_batch``, the
``batched`` variant) spreads the images over the pool.

Crop-aware decode (``imgbench.loaders.crop_decode``) uses ``code_stream`` (the parsed header)
and ``decode_region``: ``CodeStream.get_sub_code_stream(region=Region(top, left, bottom,
right))`` decoded by the same CPU decoder, which hands back only the region's pixels.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import nvidia.nvimgcodec as nvimgcodec  # this form: mypy sees `nvidia` as a namespace package

from imgbench.readers.base import BytesReader


def _cpu_decoder(threads: int | None) -> nvimgcodec.Decoder:
    return nvimgcodec.Decoder(
        device_id=nvimgcodec.NVIMGCODEC_DEVICE_CPU_ONLY,
        max_num_cpu_threads=threads or 0,
        backends=[nvimgcodec.Backend(nvimgcodec.BackendKind.CPU_ONLY)],
    )


_PARAMS = nvimgcodec.DecodeParams(
    color_spec=nvimgcodec.ColorSpec.SRGB, allow_any_depth=False, apply_exif_orientation=False
)


def _why_not(data: bytes) -> str:
    """The reason nvImageCodec gave no image: the parser's, else the decoder's (on stderr)."""
    if not data:
        return "empty input (0 bytes)"
    try:
        codec = nvimgcodec.CodeStream(data).codec_name  # the stream is parsed lazily, here
    except Exception as exc:
        return f"cannot parse it ({exc})"
    return f"its {codec} decoder failed (the reason is in nvImageCodec's log on stderr)"


def _array(image: object, data: bytes, where: str = "") -> np.ndarray:
    if image is None:
        raise ValueError(f"nvImageCodec returned no image{where}: {_why_not(data)}")
    return np.ascontiguousarray(np.asarray(image))


class NvimgcodecReader(BytesReader):
    """One image per ``Decoder.decode`` call."""

    def __init__(self, threads: int | None = None) -> None:
        self._decoder = _cpu_decoder(threads)

    def decode(self, data: bytes) -> np.ndarray:
        return _array(self._decoder.decode(data, params=_PARAMS), data)

    @staticmethod
    def code_stream(data: bytes) -> nvimgcodec.CodeStream:
        """The parsed code stream (``width``, ``height``, ``codec_name``); nothing decoded."""
        return nvimgcodec.CodeStream(data)

    def decode_region(
        self, stream: nvimgcodec.CodeStream, data: bytes, box: tuple[int, int, int, int]
    ) -> np.ndarray:
        """The pixels of ``box`` (left, top, width, height) of ``stream`` (``data``'s), decoded
        as a region (its sub code stream); the whole stream when the box is the whole image."""
        left, top, width, height = box
        if (left, top, width, height) != (0, 0, stream.width, stream.height):
            region = nvimgcodec.Region(top, left, top + height, left + width)
            stream = stream.get_sub_code_stream(region=region)
        return _array(self._decoder.decode(stream, params=_PARAMS), data, " for a region")


class NvimgcodecBatched(NvimgcodecReader):
    """A list of images per ``Decoder.decode`` call; ``decode`` is a batch of one."""

    def decode(self, data: bytes) -> np.ndarray:
        return self.decode_batch([data])[0]

    def decode_batch(self, batch: Sequence[bytes]) -> list[np.ndarray]:
        images = self._decoder.decode(list(batch), params=_PARAMS)
        return [
            _array(image, data, f" for item {i} of the batch")
            for i, (image, data) in enumerate(zip(images, batch, strict=True))
        ]
