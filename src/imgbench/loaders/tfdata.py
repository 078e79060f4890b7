"""``tf.data`` as the posts use it: ``map(num_parallel_calls=AUTOTUNE)`` then ``prefetch(AUTOTUNE)``.

Runs in the ``tensorflow`` environment (``imgbench env create tensorflow``, then
``imgbench run --env tensorflow``). The map is the train recipe of ``imgbench.augment.spec`` in
TensorFlow ops: ``read_file`` -> ``decode_jpeg`` -> a random crop of 8-100% of the area with
aspect 3/4..4/3 (``sample_distorted_bounding_box``) resized to 224 (bilinear, antialiased) ->
horizontal flip -> brightness, contrast, saturation, hue jitter -> ImageNet normalisation,
HxWx3 float32 (TensorFlow's layout). ``workers`` = 0 lets AUTOTUNE choose the parallelism;
N > 0 fixes ``num_parallel_calls`` to N.

From TFRecord (``format`` = ``tfrecord``): the pool is written once, untimed, with
``tf.io.TFRecordWriter`` (one ``tf.train.Example`` per image, features ``image`` bytes and
``label`` int64, the layout of imgbench's tfrecord format) into a temporary folder removed on
close, and read with ``TFRecordDataset`` -> ``shuffle`` (a buffer of the whole pool, at most
4096 records) -> ``map(parse_single_example + decode_jpeg + augment)``. TensorFlow writes it
itself because the ``tfrecord`` package's protos clash with TensorFlow's in one process.

A pool whose files are all JPEG (by their first bytes, read once untimed) decodes with
``decode_jpeg`` (the graph as it always was); any other pool (PNG, JPEG and PNG mixed, a PNG named
.jpg) with ``decode_image(channels=3, expand_animations=False)``, which picks the codec from the
bytes.

The ``segmentation`` task (``imgbench.augment.tasks``; its pool is image + mask pairs): the mask
PNG is decoded as RGB colours (a palette PNG expands to its colours) and one-hot encoded through
the colour table (``COLOURS``; a colour not in it fails the element, naming the mask file), then
one ``sample_distorted_bounding_box`` window and one flip draw are applied to the image and the
one-hot mask (bilinear for the image, nearest for the mask), jitter and normalisation to the
image only; out: HxWx3 float32 images and HxW int64 masks (the one-hot's argmax). From TFRecord,
each example holds ``image`` and ``mask`` bytes.

The graph cannot time its own parts, so ``stage_times_s`` is measured by running the same
functions eagerly over the pool once, outside the timed rounds (``extra.stage_times_method``).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from imgbench.augment import spec, tasks
from imgbench.loaders.base import Batch, clock
from imgbench.loaders.pipeline import CLASSIFICATION, SEGMENTATION, SamplePipeline

SHUFFLE_RECORDS = 4096
MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)


def _window(tf: Any, image: Any) -> tuple[Any, Any]:
    """The random resized crop's window (begin, size) of an HxWxC image."""
    begin, size, _ = tf.image.sample_distorted_bounding_box(
        tf.shape(image),
        bounding_boxes=tf.zeros([1, 0, 4]),
        area_range=spec.RRC_SCALE,
        aspect_ratio_range=spec.RRC_RATIO,
        max_attempts=10,
        use_image_if_no_bounding_boxes=True,
    )
    return begin, size


def _augment(tf: Any, image: Any) -> Any:
    begin, size = _window(tf, image)
    image = tf.slice(image, begin, size)
    image = tf.image.resize(image, (spec.SIZE, spec.SIZE), method="bilinear", antialias=True)
    return _jitter(tf, tf.image.random_flip_left_right(image) / 255.0)


def _jitter(tf: Any, image: Any) -> Any:
    """Colour jitter and ImageNet normalisation of an image in [0, 1]."""
    b, c, s, h = spec.JITTER
    image = tf.image.random_brightness(image, b)
    image = tf.image.random_contrast(image, 1 - c, 1 + c)
    image = tf.image.random_saturation(image, 1 - s, 1 + s)
    image = tf.image.random_hue(image, h)
    return (tf.clip_by_value(image, 0.0, 1.0) - MEAN) / STD


def _segment(tf: Any, image: Any, mask_rgb: Any, mask_name: Any) -> tuple[Any, Any]:
    """The segmentation recipe on an HxWx3 uint8 image and its HxWx3 uint8 colour mask."""
    tf.debugging.assert_equal(
        tf.shape(image)[:2], tf.shape(mask_rgb)[:2], message="mask and image sizes differ"
    )
    rgb = tf.cast(mask_rgb, tf.int32)
    code = rgb[..., 0] * 65536 + rgb[..., 1] * 256 + rgb[..., 2]
    table = tf.constant([r * 65536 + g * 256 + b for r, g, b in tasks.COLOURS], tf.int32)
    hits = tf.equal(code[..., None], table)
    tf.debugging.Assert(
        tf.reduce_all(tf.reduce_any(hits, axis=-1)),
        ["a mask colour is not in the colour table:", mask_name],
    )
    onehot = tf.cast(hits, tf.float32)  # HxWxC through the colour table
    begin, size = _window(tf, image)
    image = tf.slice(tf.cast(image, tf.float32), begin, size)
    onehot = tf.slice(onehot, begin, size)  # size's channel is -1: every class
    side = (spec.SIZE, spec.SIZE)
    image = tf.image.resize(image, side, method="bilinear", antialias=True)
    onehot = tf.image.resize(onehot, side, method="nearest")
    flip = tf.random.uniform([]) < spec.FLIP_P  # one draw for both
    image = tf.cond(flip, lambda: tf.reverse(image, [1]), lambda: image)
    onehot = tf.cond(flip, lambda: tf.reverse(onehot, [1]), lambda: onehot)
    return _jitter(tf, image / 255.0), tf.argmax(onehot, axis=-1, output_type=tf.int64)


class TfDataLoader:
    def __init__(self, pipeline: SamplePipeline, params: Mapping[str, Any]) -> None:
        import tensorflow as tf

        self.tf = tf
        source = pipeline.source
        self.paths = [p.decode() for p in source.paths]
        self.task = pipeline.config.task
        self.masks = [p.decode() for p in source.masks] if self.task == SEGMENTATION else None
        if self.task not in (CLASSIFICATION, SEGMENTATION):
            raise ValueError(f"tf-data runs classification and segmentation, not {self.task}")
        self.labels = np.asarray(getattr(source, "labels", [0] * len(self.paths)), dtype=np.int64)
        self.all_jpeg = all(_is_jpeg(p) for p in self.paths)
        self.batch_size = int(params["batch_size"])
        workers = int(params.get("workers") or 0)
        self.parallel = tf.data.AUTOTUNE if workers == 0 else workers
        self.pipeline = pipeline
        self.format = pipeline.config.format
        # what the row decoded its images with: a PNG pool's row is tf.data from PNG files
        self.extra: dict[str, Any] = {
            "image_decode_op": "decode_jpeg" if self.all_jpeg else "decode_image"
        }
        self._tmp: Path | None = None
        self.record_file: str | None = None
        if self.format == "tfrecord":
            self._write_tfrecord()
        elif self.format != "files":
            raise ValueError(f"tf-data reads files or tfrecord, not {self.format!r}")
        self.stage_times = self._eager_stage_times()

    def _write_tfrecord(self) -> None:
        """The pool as one TFRecord file, written by TensorFlow (untimed)."""
        tf = self.tf
        self._tmp = Path(tempfile.mkdtemp(prefix="imgbench-tfrecord-"))
        path = self._tmp / "data.tfrecord"
        start = clock()
        masks = self.masks or [None] * len(self.paths)
        with tf.io.TFRecordWriter(str(path)) as writer:
            for file, label, mask in zip(self.paths, self.labels, masks, strict=True):
                feature = {
                    "image": _bytes_feature(tf, file),
                    "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[int(label)])),
                }
                if mask is not None:
                    feature["mask"] = _bytes_feature(tf, mask)
                    feature["mask_name"] = _text_feature(tf, mask)
                example = tf.train.Example(features=tf.train.Features(feature=feature))
                writer.write(example.SerializeToString())
        self.record_file = str(path)
        self.extra.update(
            tfrecord_write_s=clock() - start,
            tfrecord_bytes=path.stat().st_size,
            tfrecord_written_by="tf.io.TFRecordWriter",
        )

    def _decode(self, data: Any) -> Any:
        """A pool of JPEGs: ``decode_jpeg``, as ever; else ``decode_image`` (codec from the bytes)."""
        if self.all_jpeg:
            return self.tf.io.decode_jpeg(data, channels=3)
        return self.tf.io.decode_image(data, channels=3, expand_animations=False)

    def _parse(self, record: Any) -> tuple[Any, Any]:
        tf = self.tf
        text = tf.io.FixedLenFeature([], tf.string)
        spec = {"image": text, "label": tf.io.FixedLenFeature([], tf.int64)}
        if self.masks is not None:
            spec.update(mask=text, mask_name=text)
        features = tf.io.parse_single_example(record, spec)
        image = self._decode(features["image"])
        if self.masks is not None:
            mask = tf.io.decode_png(features["mask"], channels=3)
            return _segment(tf, image, mask, features["mask_name"])
        return _augment(tf, tf.cast(image, tf.float32)), features["label"]

    def _load(self, path: Any, label: Any) -> tuple[Any, Any]:
        tf = self.tf
        image = self._decode(tf.io.read_file(path))
        return _augment(tf, tf.cast(image, tf.float32)), label

    def _load_pair(self, path: Any, mask_path: Any) -> tuple[Any, Any]:
        tf = self.tf
        image = self._decode(tf.io.read_file(path))
        mask = tf.io.decode_png(tf.io.read_file(mask_path), channels=3)
        return _segment(tf, image, mask, mask_path)

    def _eager_stage_times(self) -> dict[str, float]:
        tf = self.tf
        sums = np.zeros(3)
        masks = self.masks or [None] * len(self.paths)
        for path, mask_path in zip(self.paths, masks, strict=True):
            t0 = clock()
            data = tf.io.read_file(path)
            mask = None if mask_path is None else tf.io.read_file(mask_path)
            t1 = clock()
            image = self._decode(data)
            if mask is not None:
                mask = tf.io.decode_png(mask, channels=3)
            t2 = clock()
            if mask is None:
                _augment(tf, tf.cast(image, tf.float32)).numpy()
            else:
                _segment(tf, image, mask, tf.constant(mask_path))[1].numpy()
            sums += (t1 - t0, t2 - t1, clock() - t2)
        read, decode, augment = sums / len(self.paths)
        return {"read": read, "decode": decode, "augment": augment}

    def batches(self) -> Iterator[Batch]:
        tf = self.tf
        if self.record_file is not None:
            records = tf.data.TFRecordDataset(self.record_file, num_parallel_reads=tf.data.AUTOTUNE)
            shuffle = min(len(self.paths), SHUFFLE_RECORDS)
            samples = (
                records.shuffle(shuffle, seed=0, reshuffle_each_iteration=True)
                .repeat()
                .map(self._parse, num_parallel_calls=self.parallel, deterministic=False)
            )
        else:
            pairs = (self.paths, self.masks if self.masks is not None else self.labels)
            load = self._load if self.masks is None else self._load_pair
            samples = (
                tf.data.Dataset.from_tensor_slices(pairs)
                .shuffle(len(self.paths), seed=0, reshuffle_each_iteration=True)
                .repeat()
                .map(load, num_parallel_calls=self.parallel, deterministic=False)
            )
        dataset = samples.batch(self.batch_size, drop_remainder=True).prefetch(tf.data.AUTOTUNE)
        return ((images, labels, None, None) for images, labels in dataset)

    def worker_pids(self) -> list[int]:
        return []

    def close(self) -> None:
        if hasattr(self.tf, "keras"):
            self.tf.keras.backend.clear_session()
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None


def _is_jpeg(path: str) -> bool:
    """The file starts with JPEG's SOI marker (its extension may say otherwise)."""
    with open(path, "rb") as handle:
        return handle.read(3) == b"\xff\xd8\xff"


def _bytes_feature(tf: Any, path: str) -> Any:
    return tf.train.Feature(bytes_list=tf.train.BytesList(value=[Path(path).read_bytes()]))


def _text_feature(tf: Any, text: str) -> Any:
    return tf.train.Feature(bytes_list=tf.train.BytesList(value=[text.encode()]))


def build(pipeline: SamplePipeline, params: Mapping[str, Any]) -> TfDataLoader:
    return TfDataLoader(pipeline, params)
