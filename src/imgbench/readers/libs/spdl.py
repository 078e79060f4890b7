"""SPDL's ``spdl.io`` (FFmpeg underneath): ``load_image(bytes)`` = ``demux_image`` ->
``decode_packets`` (FFmpeg's own decoders: ``mjpeg`` for JPEG, not libjpeg-turbo) -> the
``rgb24`` filter -> ``convert_frames``, then ``to_numpy``.

FFmpeg comes from the system, not from the wheel: spdl-io loads the newest ``libavcodec`` it
finds (Debian 12: FFmpeg 5.1, ``libavcodec59``). :func:`ffmpeg_problem` is the registry's check,
so a machine without it skips these cases with the reason instead of failing them.

FFmpeg conceals damage by default (a truncated JPEG comes back grey at the bottom); the adapter
asks its decoder to stop on errors (``err_detect=explode``), so a damaged file is an error that
says so, as the pixel policy wants. Decoding stays on one thread (SPDL's default).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
from typing import Any

import numpy as np

from imgbench.errors import one_line
from imgbench.readers.base import BytesReader

# what spdl-io's FFmpeg extension links against (Debian 12: libavcodec59 libavformat59 ...)
FFMPEG_LIBRARIES = (
    "avutil",
    "avcodec",
    "avformat",
    "swscale",
    "swresample",
    "avfilter",
    "avdevice",
)
FFMPEG_DEBIAN = (
    "libavcodec59 libavformat59 libavutil57 libswscale6 libswresample4 libavfilter8 libavdevice59"
)
DECODER_OPTIONS = {"err_detect": "explode"}  # a damaged stream is an error, not concealed


class SpdlDecodeError(ValueError):
    """FFmpeg could not decode the bytes; the message says what it reported."""


def ffmpeg_problem(libraries: tuple[str, ...] = FFMPEG_LIBRARIES) -> str | None:
    """Why spdl.io cannot decode here (FFmpeg's shared libraries missing, or spdl-io's extension
    not loading against them), or None. Loads the libraries for real, as spdl-io will."""
    if libraries == FFMPEG_LIBRARIES:
        return _default_problem()
    return _problem(libraries)


@functools.cache
def _default_problem() -> str | None:
    return _problem(FFMPEG_LIBRARIES)


def _problem(libraries: tuple[str, ...]) -> str | None:
    missing = []
    for name in libraries:
        found = ctypes.util.find_library(name)
        try:
            if found is None:
                raise OSError("not found")
            ctypes.CDLL(found)
        except OSError as exc:
            missing.append(f"lib{name} ({one_line(exc)})")
    if missing:
        return (
            f"spdl.io: FFmpeg's shared libraries do not load: {', '.join(missing)}; "
            f"install them (Debian 12: apt-get install {FFMPEG_DEBIAN}; `make setup` does)"
        )
    try:
        from spdl.io.lib import _import_libspdl

        _import_libspdl()  # picks the extension built for the FFmpeg found
    except Exception as exc:
        return f"spdl.io: its FFmpeg extension does not load: {one_line(exc)}"
    return None


def ffmpeg_versions() -> dict[str, str]:
    """The FFmpeg libraries spdl-io decodes with, e.g. {"libavcodec": "59.37.100", ...}."""
    from spdl.io.lib import _import_libspdl

    versions = _import_libspdl().get_ffmpeg_versions()
    return {name: ".".join(str(n) for n in v) for name, v in sorted(versions.items())}


class SpdlLoadImage(BytesReader):
    def __init__(self) -> None:
        import spdl.io

        self._io = spdl.io
        self._filter = spdl.io.get_video_filter_desc(pix_fmt="rgb24")
        self._config = spdl.io.decode_config(decoder_options=DECODER_OPTIONS)
        # for the row: which FFmpeg decoded, and how it was asked to
        self.extra = {
            "ffmpeg": ffmpeg_versions(),
            "decoder_options": dict(DECODER_OPTIONS),
            "filter_desc": self._filter,
        }

    def decode(self, data: bytes) -> np.ndarray:
        return self._load(data)

    def read(self, path: str) -> np.ndarray:
        return self._load(path)  # spdl.io opens the file itself (FFmpeg's file protocol)

    def _load(self, src: Any) -> np.ndarray:
        try:
            buffer = self._io.load_image(src, decode_config=self._config, filter_desc=self._filter)
        except IndexError:  # no frame came out: the decoder stopped on a damaged stream
            raise SpdlDecodeError(
                "spdl.io: FFmpeg decoded no frame (truncated or corrupt image)"
            ) from None
        except RuntimeError as exc:
            raise SpdlDecodeError(f"spdl.io could not decode: {_ffmpeg_message(exc)}") from None
        return np.ascontiguousarray(self._io.to_numpy(buffer))


def _ffmpeg_message(exc: Exception) -> str:
    """FFmpeg's reason without the C++ source location spdl appends."""
    text = one_line(exc)
    cut = text.rfind(" (/")
    return text[:cut] if cut > 0 else text
