"""TensorFlow ``tf.io`` (in the ``tensorflow`` venv): ``decode_image`` and ``decode_jpeg``.

``channels=3`` asks for RGB (alpha dropped, gray replicated). ``decode_jpeg`` keeps TF's default
DCT method, which differs from libjpeg's accurate IDCT by about one level. For 16-bit PNGs TF
scales to uint8 itself (``v * 255 / 65535``), within one level of the policy's high byte.
"""

from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # before the import: TF's C++ start-up logs

import numpy as np
import tensorflow as tf

from imgbench.readers.base import BytesReader


class TfDecodeImage(BytesReader):
    def decode(self, data: bytes) -> np.ndarray:
        return tf.io.decode_image(data, channels=3, expand_animations=False).numpy()

    def read(self, path: str) -> np.ndarray:
        data = tf.io.read_file(path)
        return tf.io.decode_image(data, channels=3, expand_animations=False).numpy()


class TfDecodeJpeg(BytesReader):
    def decode(self, data: bytes) -> np.ndarray:
        return tf.io.decode_jpeg(data, channels=3).numpy()

    def read(self, path: str) -> np.ndarray:
        return tf.io.decode_jpeg(tf.io.read_file(path), channels=3).numpy()
