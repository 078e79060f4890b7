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

from imgbench.augment import spec
from imgbench.loaders.base import Batch, clock
from imgbench.loaders.pipeline import SamplePipeline

SHUFFLE_RECORDS = 4096
MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)


def _augment(tf: Any, image: Any) -> Any:
    begin, size, _ = tf.image.sample_distorted_bounding_box(
        tf.shape(image),
        bounding_boxes=tf.zeros([1, 0, 4]),
        area_range=spec.RRC_SCALE,
        aspect_ratio_range=spec.RRC_RATIO,
        max_attempts=10,
        use_image_if_no_bounding_boxes=True,
    )
    image = tf.slice(image, begin, size)
    image = tf.image.resize(image, (spec.SIZE, spec.SIZE), method="bilinear", antialias=True)
    image = tf.image.random_flip_left_right(image) / 255.0
    b, c, s, h = spec.JITTER
    image = tf.image.random_brightness(image, b)
    image = tf.image.random_contrast(image, 1 - c, 1 + c)
    image = tf.image.random_saturation(image, 1 - s, 1 + s)
    image = tf.image.random_hue(image, h)
    return (tf.clip_by_value(image, 0.0, 1.0) - MEAN) / STD


class TfDataLoader:
    def __init__(self, pipeline: SamplePipeline, params: Mapping[str, Any]) -> None:
        import tensorflow as tf

        self.tf = tf
        source = pipeline.source
        self.paths = [p.decode() for p in source.paths]
        self.labels = np.asarray(source.labels, dtype=np.int64)
        self.batch_size = int(params["batch_size"])
        workers = int(params.get("workers") or 0)
        self.parallel = tf.data.AUTOTUNE if workers == 0 else workers
        self.pipeline = pipeline
        self.format = pipeline.config.format
        self.extra: dict[str, Any] = {}
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
        with tf.io.TFRecordWriter(str(path)) as writer:
            for file, label in zip(self.paths, self.labels, strict=True):
                feature = {
                    "image": tf.train.Feature(
                        bytes_list=tf.train.BytesList(value=[Path(file).read_bytes()])
                    ),
                    "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[int(label)])),
                }
                example = tf.train.Example(features=tf.train.Features(feature=feature))
                writer.write(example.SerializeToString())
        self.record_file = str(path)
        self.extra.update(
            tfrecord_write_s=clock() - start,
            tfrecord_bytes=path.stat().st_size,
            tfrecord_written_by="tf.io.TFRecordWriter",
        )

    def _parse(self, record: Any) -> tuple[Any, Any]:
        tf = self.tf
        features = tf.io.parse_single_example(
            record,
            {
                "image": tf.io.FixedLenFeature([], tf.string),
                "label": tf.io.FixedLenFeature([], tf.int64),
            },
        )
        image = tf.io.decode_jpeg(features["image"], channels=3)
        return _augment(tf, tf.cast(image, tf.float32)), features["label"]

    def _load(self, path: Any, label: Any) -> tuple[Any, Any]:
        tf = self.tf
        image = tf.io.decode_jpeg(tf.io.read_file(path), channels=3)
        return _augment(tf, tf.cast(image, tf.float32)), label

    def _eager_stage_times(self) -> dict[str, float]:
        tf = self.tf
        sums = np.zeros(3)
        for path in self.paths:
            t0 = clock()
            data = tf.io.read_file(path)
            t1 = clock()
            image = tf.io.decode_jpeg(data, channels=3)
            t2 = clock()
            _augment(tf, tf.cast(image, tf.float32)).numpy()
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
            samples = (
                tf.data.Dataset.from_tensor_slices((self.paths, self.labels))
                .shuffle(len(self.paths), seed=0, reshuffle_each_iteration=True)
                .repeat()
                .map(self._load, num_parallel_calls=self.parallel, deterministic=False)
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


def build(pipeline: SamplePipeline, params: Mapping[str, Any]) -> TfDataLoader:
    return TfDataLoader(pipeline, params)
