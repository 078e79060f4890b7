"""A tf.data pipeline over a folder of JPEGs, as TensorFlow's tutorials write it: read, decode,
resize and flip in one parallel map, then batch and prefetch (TensorFlow environment).

``bad`` adds a file that is not a JPEG: its element raises in decode_jpeg.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import tensorflow as tf


def _load(path: Any) -> Any:
    image = tf.io.decode_jpeg(tf.io.read_file(path), channels=3)
    image = tf.image.resize(image, (128, 128))
    return tf.image.random_flip_left_right(image)


def make_dataset(root: str, batch_size: int = 8, threads: int = 0, bad: bool = False) -> Any:
    """``threads``: the pipeline's own ``private_threadpool_size`` (0: TensorFlow's default)."""
    paths = sorted(str(p) for p in Path(root).rglob("*.jpg"))
    if bad:
        paths = [str(Path(__file__)), *paths]  # this source file as an image: decode_jpeg raises
    dataset = (
        tf.data.Dataset.from_tensor_slices(paths)
        .shuffle(len(paths))
        .map(_load, num_parallel_calls=tf.data.AUTOTUNE)
        .batch(batch_size)
        .prefetch(tf.data.AUTOTUNE)
    )
    if threads:
        options = tf.data.Options()
        options.threading.private_threadpool_size = threads
        dataset = dataset.with_options(options)
    return dataset


def make_number() -> int:
    """Not a pipeline: the profile refuses it in one line."""
    return 7
