"""tf.data as TensorFlow's own ResNet input pipeline builds it (tensorflow/models
official/legacy/image_classification/resnet/imagenet_preprocessing.py: ``_decode_crop_and_flip``
decodes only the crop's window with ``tf.image.decode_and_crop_jpeg``; the tf.data performance
guide: ``map(num_parallel_calls=AUTOTUNE, deterministic=False)``, ``batch``, ``prefetch``). The
window is drawn as the recipe draws it (area 8-100% uniform, aspect 3/4..4/3 log-uniform, the
first of 10 that fits), then resize 224 (bilinear, antialiased), flip, jitter, normalise.
Runs in the tensorflow environment's Python.

    .venvs/tensorflow/bin/python lab/peers/tf_resnet.py ROOT --batch 32
"""

from __future__ import annotations

import math

import tensorflow as tf
from common import AREA, ASPECT, JITTER, MEAN, SIZE, STD, arguments, image_folder, time_batches


def window(shape):  # type: ignore[no-untyped-def]
    height, width = tf.cast(shape[0], tf.float32), tf.cast(shape[1], tf.float32)
    area = height * width * tf.random.uniform([10], *AREA)
    ratio = tf.exp(tf.random.uniform([10], math.log(ASPECT[0]), math.log(ASPECT[1])))
    w, h = tf.round(tf.sqrt(area * ratio)), tf.round(tf.sqrt(area / ratio))
    fits = (w <= width) & (h <= height)
    first = tf.argmax(tf.cast(fits, tf.int32))
    found = tf.reduce_any(fits)
    cw = tf.cast(tf.where(found, w[first], width), tf.int32)
    ch = tf.cast(tf.where(found, h[first], height), tf.int32)
    y = tf.random.uniform([], 0, tf.cast(shape[0], tf.int32) - ch + 1, tf.int32)
    x = tf.random.uniform([], 0, tf.cast(shape[1], tf.int32) - cw + 1, tf.int32)
    return tf.stack([y, x, ch, cw])


def parse(path, label):  # type: ignore[no-untyped-def]
    data = tf.io.read_file(path)
    image = tf.image.decode_and_crop_jpeg(data, window(tf.image.extract_jpeg_shape(data)), 3)
    image = tf.image.resize(tf.cast(image, tf.float32), (SIZE, SIZE), "bilinear", antialias=True)
    image = tf.image.random_flip_left_right(image) / 255.0
    b, c, s, h = JITTER
    image = tf.image.random_brightness(image, b)
    image = tf.image.random_contrast(image, 1 - c, 1 + c)
    image = tf.image.random_saturation(image, 1 - s, 1 + s)
    image = tf.image.random_hue(image, h)
    return (tf.clip_by_value(image, 0.0, 1.0) - MEAN) / STD, label


def main() -> None:
    args = arguments()
    paths, labels = image_folder(args.root)
    dataset = (
        tf.data.Dataset.from_tensor_slices((paths, labels))
        .shuffle(len(paths), reshuffle_each_iteration=True)
        .repeat()
        .map(parse, num_parallel_calls=tf.data.AUTOTUNE, deterministic=False)
        .batch(args.batch, drop_remainder=True)
        .prefetch(tf.data.AUTOTUNE)
    )
    time_batches(iter(dataset), args, lambda b: int(b[0].shape[0]))


if __name__ == "__main__":
    main()
