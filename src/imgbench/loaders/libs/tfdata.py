"""``tf.data`` as the posts use it: ``map(num_parallel_calls=AUTOTUNE)`` then ``prefetch(AUTOTUNE)``.

Runs in the ``tensorflow`` environment (``imgbench env create tensorflow``, then
``imgbench run --env tensorflow``). The map is the train recipe of ``imgbench.augment.spec`` in
TensorFlow ops: ``read_file`` -> ``decode_jpeg`` -> a random crop of 8-100% of the area with
aspect 3/4..4/3 (drawn as torchvision's RandomResizedCrop draws it: ``_window_of``) resized to 224 (bilinear, antialiased) ->
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
one random resized crop window (``_window_of``) and one flip draw are applied to the image and the
one-hot mask (bilinear for the image, nearest for the mask), jitter and normalisation to the
image only; out: HxWx3 float32 images and HxW int64 masks (the one-hot's argmax). From TFRecord,
each example holds ``image`` and ``mask`` bytes.

The graph cannot time its own parts, so ``stage_times_s`` is measured by running the same
functions eagerly over the pool once, outside the timed rounds (``extra.stage_times_method``).
"""

from __future__ import annotations

import math
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from imgbench.augment import spec, tasks
from imgbench.loaders.base import Batch, LoaderError, clock
from imgbench.loaders.documented import ROI, Documented
from imgbench.loaders.pipeline import CLASSIFICATION, SEGMENTATION, SamplePipeline

if TYPE_CHECKING:
    from imgbench.loaders.plan import LoaderPlan
    from imgbench.measure.case import Case

SHUFFLE_RECORDS = 4096
DIAGNOSIS_MAX_S = 30.0  # naming bad files after a graph error: at most this long
NAMED_BAD = 10
DECODE_AND_CROP = "decode-and-crop-jpeg"  # the tf_decode parameter of the as-documented row
# TensorFlow's own ResNet-50 input pipeline decodes only the crop's window
DOCUMENTED = Documented(
    source="tensorflow/models official/legacy/image_classification/resnet/"
    "imagenet_preprocessing.py, _decode_crop_and_flip (decode_and_crop_jpeg), and the tf.data "
    "performance guide (map AUTOTUNE, deterministic=False, prefetch); TensorFlow 2.x",
    params={"tf_decode": DECODE_AND_CROP},
    crop_decode=ROI,
)
MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)


def _window(tf: Any, image: Any) -> tuple[Any, Any]:
    """The random resized crop's window (begin, size) of an HxWxC image."""
    return _window_of(tf, tf.shape(image))


def _window_of(tf: Any, shape: Any) -> tuple[Any, Any]:
    """The random resized crop's window (begin [y, x, 0], size [h, w, -1]) in an image of
    ``shape`` (H, W, C), drawn as the recipe draws it (torchvision's RandomResizedCrop: area
    uniform in RRC_SCALE, aspect log-uniform in RRC_RATIO, the first of 10 draws that fits,
    else the whole image clamped to the aspect range; a uniform position).

    Not ``sample_distorted_bounding_box``: with these ranges its windows averaged 0.36 of the
    image's area on 320x240 photos where the recipe's average 0.435 (384 draws against 4,000), so
    a tf.data row cropped, resized and (decoding the window only) decoded less than the others.
    """
    height = tf.cast(shape[0], tf.float32)
    width = tf.cast(shape[1], tf.float32)
    low, high = spec.RRC_SCALE
    area = height * width * tf.random.uniform([10], low, high)
    log_low, log_high = math.log(spec.RRC_RATIO[0]), math.log(spec.RRC_RATIO[1])
    ratio = tf.exp(tf.random.uniform([10], log_low, log_high))
    w = tf.round(tf.sqrt(area * ratio))
    h = tf.round(tf.sqrt(area / ratio))
    fits = (w > 0) & (h > 0) & (w <= width) & (h <= height)
    first = tf.argmax(tf.cast(fits, tf.int32))  # the first that fits (argmax: first maximum)
    # the fallback: the whole image, narrowed to the aspect range (torchvision's centre crop)
    aspect = width / height
    whole_w = tf.where(aspect > spec.RRC_RATIO[1], tf.round(height * spec.RRC_RATIO[1]), width)
    whole_h = tf.where(aspect < spec.RRC_RATIO[0], tf.round(width / spec.RRC_RATIO[0]), height)
    found = tf.reduce_any(fits)
    crop_w = tf.cast(tf.where(found, w[first], whole_w), tf.int32)
    crop_h = tf.cast(tf.where(found, h[first], whole_h), tf.int32)
    y = tf.random.uniform([], 0, tf.cast(shape[0], tf.int32) - crop_h + 1, tf.int32)
    x = tf.random.uniform([], 0, tf.cast(shape[1], tf.int32) - crop_w + 1, tf.int32)
    return tf.stack([y, x, 0]), tf.stack([crop_h, crop_w, -1])


def _augment(tf: Any, image: Any) -> Any:
    begin, size = _window(tf, image)
    return _resize_flip_jitter(tf, tf.slice(image, begin, size))


def _decode_and_crop(tf: Any, data: Any) -> Any:
    """TensorFlow's own ResNet preprocessing (``_decode_crop_and_flip``): the window is drawn
    from the JPEG's header (``extract_jpeg_shape``) and only it is decoded
    (``decode_and_crop_jpeg``), then resized, flipped and jittered as :func:`_augment` does."""
    begin, size = _window_of(tf, tf.image.extract_jpeg_shape(data))
    offset_y, offset_x, _ = tf.unstack(begin)
    height, width, _ = tf.unstack(size)
    window = tf.stack([offset_y, offset_x, height, width])
    image = tf.image.decode_and_crop_jpeg(data, window, channels=3)
    return _resize_flip_jitter(tf, tf.cast(image, tf.float32))


def _resize_flip_jitter(tf: Any, image: Any) -> Any:
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
        # as TensorFlow's ResNet preprocessing: decode only the crop's window (JPEG pools only:
        # decode_and_crop_jpeg reads JPEG; any other pool decodes whole, and says so)
        self.roi = (
            params.get("tf_decode") == DECODE_AND_CROP
            and self.all_jpeg
            and self.task == CLASSIFICATION
        )
        self.batch_size = int(params["batch_size"])
        workers = int(params.get("workers") or 0)
        self.parallel = tf.data.AUTOTUNE if workers == 0 else workers
        self.pipeline = pipeline
        self.format = pipeline.config.format
        # what the row decoded its images with: a PNG pool's row is tf.data from PNG files
        op = (
            "decode_and_crop_jpeg"
            if self.roi
            else "decode_jpeg"
            if self.all_jpeg
            else "decode_image"
        )
        self.extra: dict[str, Any] = {"image_decode_op": op}
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
        if self.roi:
            return _decode_and_crop(tf, features["image"]), features["label"]
        image = self._decode(features["image"])
        if self.masks is not None:
            mask = tf.io.decode_png(features["mask"], channels=3)
            return _segment(tf, image, mask, features["mask_name"])
        return _augment(tf, tf.cast(image, tf.float32)), features["label"]

    def _load(self, path: Any, label: Any) -> tuple[Any, Any]:
        tf = self.tf
        if self.roi:
            return _decode_and_crop(tf, tf.io.read_file(path)), label
        image = self._decode(tf.io.read_file(path))
        return _augment(tf, tf.cast(image, tf.float32)), label

    def _load_pair(self, path: Any, mask_path: Any) -> tuple[Any, Any]:
        tf = self.tf
        image = self._decode(tf.io.read_file(path))
        mask = tf.io.decode_png(tf.io.read_file(mask_path), channels=3)
        return _segment(tf, image, mask, mask_path)

    def _eager_stage_times(self) -> dict[str, float]:
        """Seconds per image in (read, decode, augment), the same functions run eagerly over the
        pool (outside the timed rounds); a file the decode rejects fails the case by name."""
        sums = np.zeros(3)
        masks = self.masks or [None] * len(self.paths)
        for path, mask_path in zip(self.paths, masks, strict=True):
            try:
                sums += self._eager_parts(path, mask_path)
            except self.tf.errors.OpError as exc:
                message = " ".join(str(exc.message).split())[:1000]
                raise LoaderError(f"tf.data: {message} [sample {path}]") from None
        read, decode, augment = sums / len(self.paths)
        return {"read": read, "decode": decode, "augment": augment}

    def _eager_parts(self, path: str, mask_path: str | None) -> tuple[float, float, float]:
        tf = self.tf
        t0 = clock()
        data = tf.io.read_file(path)
        mask = None if mask_path is None else tf.io.read_file(mask_path)
        t1 = clock()
        if self.roi:  # the decode is the crop's: one part, counted as the decode's
            _decode_and_crop(tf, data).numpy()
            return t1 - t0, clock() - t1, 0.0
        image = self._decode(data)
        if mask is not None:
            mask = tf.io.decode_png(mask, channels=3)
        t2 = clock()
        if mask is None:
            _augment(tf, tf.cast(image, tf.float32)).numpy()
        else:
            _segment(tf, image, mask, tf.constant(mask_path))[1].numpy()
        return t1 - t0, t2 - t1, clock() - t2

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
        return self._named_failures((images, labels, None, None) for images, labels in dataset)

    def _named_failures(self, batches: Iterator[Batch]) -> Iterator[Batch]:
        """The batches; a graph error (TensorFlow names the op, not the file) becomes one that
        names each file of the pool the same decode rejects."""
        try:
            yield from batches
        except self.tf.errors.OpError as exc:
            bad = self._bad_files()
            if not bad:
                raise
            named = "; ".join(f"{path} ({why})" for path, why in bad[:NAMED_BAD])
            more = f" and {len(bad) - NAMED_BAD} more" if len(bad) > NAMED_BAD else ""
            cause = " ".join(str(exc.message).split())[:200]
            raise LoaderError(
                f"tf.data: {len(bad)} file(s) of the pool cannot be decoded: {named}{more} "
                f"[TensorFlow: {cause}]"
            ) from None

    def _bad_files(self) -> list[tuple[str, str]]:
        """(path, reason) of each image the row's decode rejects, eagerly, at most 30 s."""
        tf = self.tf
        bad: list[tuple[str, str]] = []
        end = clock() + DIAGNOSIS_MAX_S
        for path in self.paths:
            if clock() > end:
                break
            try:
                data = tf.io.read_file(path)
                if int(tf.strings.length(data)) == 0:
                    raise ValueError("zero bytes")
                if self.roi:
                    _decode_and_crop(tf, data).numpy()
                else:
                    self._decode(data).numpy()
            except (ValueError, tf.errors.OpError) as exc:
                text = exc.message if isinstance(exc, tf.errors.OpError) else str(exc)
                bad.append((path, " ".join(str(text).split())[:120]))
        return bad

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


def documented_cases(plan: LoaderPlan) -> list[Case]:
    """tf.data as TensorFlow's ResNet preprocessing builds it: decode_and_crop_jpeg, from the
    files and from TFRecord, AUTOTUNE parallelism (the same-recipe rows' workers)."""
    from imgbench.loaders.cases import loader_case
    from imgbench.loaders.registry import get_loader, pipeline_config

    entry = get_loader("tf-data")
    names = [n for n in entry.pipelines if pipeline_config(n).task == CLASSIFICATION]
    return [
        loader_case(entry.library, w, plan=plan, config=pipeline_config(n), documented=DOCUMENTED)
        for n in names
        for w in entry.workers
    ]
