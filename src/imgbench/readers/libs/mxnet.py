"""MXNet's ``mx.image.imdecode`` and ``mx.image.imread`` (in the ``mxnet`` venv, MXNet 1.9.1).

Both run OpenCV's decoders bundled in the mxnet wheel, as an operator of MXNet's engine: the call
returns an NDArray at once and ``asnumpy()`` waits for the decode and copies the pixels out, so
the copy is part of the measured time, as every reader's conversion is. ``flag=1`` asks for
3 channels (gray replicated, alpha dropped, 16 bit to the high byte) and ``to_rgb=True`` (the
default) for RGB. For JPEG and PNG MXNet reads the size from the header, allocates the output and
decodes into it with ``IMREAD_IGNORE_ORIENTATION``: EXIF orientation is not applied, as the
stage's contract says. A truncated JPEG decodes to its readable rows without an error (libjpeg
only warns); verification flags it, so it is never timed. MXNet's errors (``MXNetError``, a C++
traceback) are raised as one line: the check that failed.
"""

from __future__ import annotations

import warnings

import numpy as np

from imgbench.readers.base import BytesReader

with warnings.catch_warnings():  # mxnet.numpy's np.bool alias (numpy 1.23 still has it)
    warnings.simplefilter("ignore", DeprecationWarning)
    import mxnet as mx


def _one_line(exc: Exception) -> str:
    """The last line of an MXNetError (its first lines are a C++ traceback header)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[-1] if lines else type(exc).__name__


class Imdecode(BytesReader):
    """``decode``: ``mx.image.imdecode(bytes)``; ``read``: ``mx.image.imread(path)`` (MXNet reads
    the file itself, then decodes the same way)."""

    def decode(self, data: bytes) -> np.ndarray:
        try:
            return mx.image.imdecode(data, flag=1, to_rgb=True).asnumpy()
        except mx.base.MXNetError as exc:
            raise ValueError(f"mx.image.imdecode: {_one_line(exc)}") from None

    def read(self, path: str) -> np.ndarray:
        try:
            return mx.image.imread(path, flag=1, to_rgb=True).asnumpy()
        except mx.base.MXNetError as exc:
            raise ValueError(f"mx.image.imread({path}): {_one_line(exc)}") from None
