"""The pipeline every loader runs: format reader -> decoder -> augmentation -> collate.

Each part comes from its own stage: payloads from the dataset's files or any imgbench format
(``imgbench.formats``), decoding from ``imgbench.readers``, augmentation from
``imgbench.augment`` (the train-classification recipe by default). A sample is timed per part
inside the pipeline, in whichever process or thread runs it, and the times travel with the batch,
so every loader row can say where the time went.

The decoder hands the augmentation what the augmentation takes: the HxWx3 uint8 array, or the
decoding library's own image object where the reader declares one (``native``) and the
augmentation's pipeline takes that kind (Pillow's image into torchvision's PIL transforms, as
``ImageFolder`` does), with no array round trip in between (:func:`build_stages`).

Tasks (``PipelineConfig.task``, ``imgbench.augment.tasks``) go through the same code path: a
``segmentation`` sample's payload is its image's and its mask's bytes (:class:`PairSource`), the
decoder hands (image, class-index mask) to the library's segmentation recipe, and the batch is
(float32 Bx3xHxW images, int64 BxHxW masks); a ``crop-ocr`` sample carries four int labels
(:class:`HeadsSource`) and the collate one-hot encodes them per batch, as seed 000's Keras
``Sequence`` does with ``to_categorical`` (:func:`collate_heads`).

Crop-aware decode (``PipelineConfig.crop_decode``, ``imgbench.loaders.crop_decode``): the
recipe's random-resized-crop window is drawn from the JPEG's header before decoding, the decoder
decodes only that window (``roi``), or the whole image at a DCT-reduced scale that keeps the
window at least the output side (``reduced``), or both (``roi-reduced``), and the augmentation
runs the rest of the recipe (resize the window, flip, jitter, normalise).

Everything here pickles small and builds its libraries lazily in the process that uses them:
a spawned worker receives names and paths, not open files or decoders.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal, cast

import numpy as np

from imgbench.loaders.base import Batch, clock
from imgbench.loaders.crop_decode import CROP_DECODES, FULL_DECODE, CropDecode

if TYPE_CHECKING:
    from imgbench.formats.base import FormatMeta
    from imgbench.objectstore.server import S3Endpoint
    from imgbench.readers.base import NativeReader

STAGES = ("read", "decode", "augment")  # per sample; "collate" is per batch
FILES = "files"  # the dataset's own image files, one read per sample (an image folder)
NO_AUGMENT = "none"  # decode only; the arrays pass through as a list (no tensor)
ARRAY = "hwc-uint8"  # what a decoder hands over unless both sides take a native image object
# where a format's store lives (PipelineConfig.storage)
LOCAL: Final = "local"
S3: Final = "s3"
# what the loader holds in RAM before its first batch (PipelineConfig.preload): nothing (each
# sample read from its store), the pool's encoded bytes (nothing left to read), or its decoded
# pixels (nothing left to read or decode): the two in-RAM ceilings (imgbench.loaders.in_ram)
NO_PRELOAD: Final = "none"
PRELOAD_BYTES: Final = "bytes"
PRELOAD_DECODED: Final = "decoded"
Preload = Literal["none", "bytes", "decoded"]
CLASSIFICATION: Final = "classification"
SEGMENTATION: Final = "segmentation"
CROP_OCR: Final = "crop-ocr"
# how the recipe's random crop meets the decoder (PipelineConfig.crop_decode): decode the whole
# image then crop (the recipe's way), or crop-aware (imgbench.loaders.crop_decode, which imports
# nothing of this module: the dependency points one way)


@dataclass(frozen=True)
class PipelineConfig:
    """Which reader, decoder and augmentation a sample goes through."""

    format: str = FILES  # FILES, or an imgbench.formats name such as "lmdb"
    decoder: str = "opencv/imdecode-rgb"  # readers registry "library/variant"
    augment: str = "albumentations/numpy"  # augment registry "library/variant", or NO_AUGMENT
    recipe: str = "train-classification"  # augment pipeline name
    # where the format's store lives: a folder on the dataset's disk, or the session's S3 bucket
    # (the local build uploaded; formats with an S3 reader, imgbench.formats.registry.S3_FORMATS)
    storage: Literal["local", "s3"] = LOCAL
    # what a sample is and what comes out (imgbench.augment.tasks.TASKS); a task other than
    # classification runs its library's task recipe (``recipe`` names the task)
    task: str = CLASSIFICATION
    # "full": the decoder decodes the whole image and the recipe crops it; otherwise the crop
    # window is drawn from the header before decode and the decoder decodes only it ("roi"), the
    # whole image at a reduced scale ("reduced"), or both ("roi-reduced"); the augmentation runs
    # the rest of the recipe (imgbench.loaders.crop_decode)
    crop_decode: CropDecode = FULL_DECODE
    # the pool held in RAM before the first batch (NO_PRELOAD, PRELOAD_BYTES, PRELOAD_DECODED):
    # the in-RAM ceilings every answer is measured against (imgbench.loaders.in_ram)
    preload: Preload = NO_PRELOAD

    def __post_init__(self) -> None:
        if self.preload not in (NO_PRELOAD, PRELOAD_BYTES, PRELOAD_DECODED):
            raise ValueError(f"preload {self.preload!r}: none, bytes or decoded")
        if self.preload != NO_PRELOAD and (
            self.storage != LOCAL or self.task != CLASSIFICATION or self.crop_decode != FULL_DECODE
        ):
            raise ValueError(
                f"preload={self.preload} is for local classification pipelines that decode "
                "whole images"
            )
        if self.crop_decode not in CROP_DECODES:
            raise ValueError(f"crop_decode {self.crop_decode!r}: one of {CROP_DECODES}")
        if self.crop_decode != FULL_DECODE and (
            self.task != CLASSIFICATION or self.augment == NO_AUGMENT
        ):
            raise ValueError(
                f"crop_decode={self.crop_decode} needs a classification recipe that crops, "
                f"not task {self.task} with augmentation {self.augment}"
            )

    @property
    def label(self) -> str:
        aug = self.augment if self.augment == NO_AUGMENT else f"{self.augment}:{self.recipe}"
        where = f"{self.storage}:{self.format}" if self.storage != LOCAL else self.format
        decoder = self.decoder
        if self.crop_decode != FULL_DECODE:  # only then: full pipelines keep their labels
            decoder = f"{decoder} [{self.crop_decode} decode]"
        label = f"{where} > {decoder} > {aug}"
        if self.preload != NO_PRELOAD:  # only then: the other pipelines keep their labels
            label = f"{self.preload} in RAM: {label}"
        return label if self.task == CLASSIFICATION else f"{label} ({self.task})"


# -- sources: index -> (payload, label) ----------------------------------------------------------
class FileSource:
    """The dataset's files read one by one. Paths are kept in a NumPy array, not a Python list,
    so forked workers reading them do not copy the index (see ``imgbench.loaders.cow``)."""

    def __init__(self, paths: Sequence[str], labels: Sequence[int]) -> None:
        self.paths = np.asarray([os.fsencode(p) for p in paths])
        self.labels = np.asarray(labels, dtype=np.int64)

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, index: int) -> tuple[bytes, int]:
        with open(self.paths[index], "rb") as handle:
            return handle.read(), int(self.labels[index])

    def name(self, index: int) -> str:
        """What a sample's error names: its file."""
        return os.fsdecode(self.paths[index])


class PairSource:
    """Image + mask pairs (``imgbench.datasets.pairs``): the payload is both files' bytes and the
    mask's name (a bad mask's error names it), the label the pair's index (the mask is the
    target)."""

    def __init__(self, images: Sequence[str], masks: Sequence[str]) -> None:
        self.paths = np.asarray([os.fsencode(p) for p in images])
        self.masks = np.asarray([os.fsencode(p) for p in masks])

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, index: int) -> tuple[tuple[bytes, bytes, str], int]:
        with open(self.paths[index], "rb") as image, open(self.masks[index], "rb") as mask:
            return (image.read(), mask.read(), os.fsdecode(self.masks[index])), int(index)

    def name(self, index: int) -> str:
        return os.fsdecode(self.paths[index])


class HeadsSource(FileSource):
    """The dataset's files, each with ``heads`` int labels (crop-ocr's label heads)."""

    def __init__(self, paths: Sequence[str], heads: np.ndarray, classes: int) -> None:
        super().__init__(paths, [0] * len(paths))
        self.heads = np.ascontiguousarray(heads, dtype=np.int64)
        self.classes = classes

    def __getitem__(self, index: int) -> tuple[bytes, Any]:
        with open(self.paths[index], "rb") as handle:
            return handle.read(), tuple(int(v) for v in self.heads[index])


class _OpenedPerProcess:
    """A store read through a reader opened lazily, once per process: handles (LMDB, HDF5, a boto3
    client's connection pool) must not cross a fork, and a pickled source carries no reader."""

    _reader: Any = None
    _pid = -1

    def _open_reader(self) -> Any:
        raise NotImplementedError

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_reader": None, "_pid": -1}

    def _open(self) -> Any:
        if self._reader is None or self._pid != os.getpid():
            self._reader = self._open_reader()
            self._pid = os.getpid()
        return self._reader

    def __getitem__(self, index: int) -> tuple[Any, int]:
        return self._open()[index]

    def close(self) -> None:
        if self._reader is not None and self._pid == os.getpid():
            self._reader.close()
        self._reader = None


class FormatSource(_OpenedPerProcess):
    """A built imgbench format on local disk."""

    def __init__(self, name: str, path: Path, count: int) -> None:
        self.name, self.path, self.count = name, Path(path), count

    def __len__(self) -> int:
        return self.count

    def _open_reader(self) -> Any:
        from imgbench.formats.base import open_format
        from imgbench.formats.registry import get_format

        return open_format(get_format(self.name), self.path)


class S3FormatSource(_OpenedPerProcess):
    """A store in the session's S3 bucket (a format's local build uploaded), read through the
    format's S3 reader (``imgbench.formats.s3.open_s3``): one GET per sample, a ranged one into
    a tar shard or a whole object per image. A DataLoader worker opens its own reader on its
    first sample; ``labels`` are the local build's key list, so the first batch's labels are
    checked without a request."""

    def __init__(
        self,
        name: str,
        endpoint: S3Endpoint,
        prefix: str,
        meta: FormatMeta,
        labels: Sequence[int],
    ) -> None:
        self.name, self.endpoint, self.prefix, self.meta = name, endpoint, prefix, meta
        self.labels = np.asarray(labels, dtype=np.int64)

    def __len__(self) -> int:
        return self.meta.count

    def _open_reader(self) -> Any:
        from imgbench.formats.registry import get_s3_format
        from imgbench.formats.s3 import open_s3

        return open_s3(get_s3_format(self.name), self.endpoint, self.prefix, meta=self.meta)


# -- the per-sample pipeline -----------------------------------------------------------------------
class SampleError(ValueError):
    """A sample that could not be decoded, named (its file, or its index in a store)."""


def sample_name(source: Any, index: int) -> str:
    name = getattr(source, "name", None)
    return str(name(index)) if callable(name) else f"sample {index} of the store"


class SamplePipeline:
    """A map-style dataset: ``pipeline[i] -> (image, label, (read_s, decode_s, augment_s))``."""

    def __init__(self, source: Any, config: PipelineConfig) -> None:
        self.source = source
        self.config = config
        self._decode: Any = None
        self._augment: Any = None
        self._info: Callable[[], dict[str, int]] | None = None

    def __len__(self) -> int:
        return len(self.source)

    def __getstate__(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "config": self.config,
            "_decode": None,
            "_augment": None,
            "_info": None,
        }

    def close(self) -> None:
        """Close the source's files in this process (LMDB refuses a second open of a path)."""
        close = getattr(self.source, "close", None)
        if close is not None:
            close()

    def build(self) -> None:
        """Import and build the decoder and augmentation (once per process)."""
        if self._decode is None or self._augment is None:
            stages = build_stages(self.config)
            self._decode, self._augment, self._info = stages.decode, stages.augment, stages.info

    def decode_info(self) -> dict[str, int]:
        """What the decoder did in this process: a crop-aware decoder's counts (JPEGs decoded
        crop-aware, images that fell back to decode-then-crop, decodes per scale); empty for a
        full decode. Each worker process counts its own samples."""
        return {} if self._info is None else self._info()

    def __getitem__(self, index: int) -> tuple[Any, int, tuple[float, float, float]]:
        if self._decode is None or self._augment is None:
            self.build()
        t0 = clock()
        payload, label = self.source[index]
        t1 = clock()
        try:
            # decoded pixels skip the decoder, except into a crop-aware one (it cuts the window)
            skip = isinstance(payload, np.ndarray) and self.config.crop_decode == FULL_DECODE
            image = payload if skip else self._decode(payload)
        except Exception as exc:  # the loader's error (in whichever worker) names the sample
            raise SampleError(
                f"{sample_name(self.source, index)}: {type(exc).__name__}: {exc}"
            ) from exc
        t2 = clock()
        out = self._augment(image)
        t3 = clock()
        return out, label, (t1 - t0, t2 - t1, t3 - t2)


@dataclass(frozen=True)
class Stages:
    """A pipeline's decode and augment functions, and what passes between them (``handoff``:
    ``ARRAY``, or the native image kind such as ``"pil"``)."""

    decode: Callable[[Any], Any]
    augment: Callable[[Any], Any]
    handoff: str
    info: Callable[[], dict[str, int]] | None = None  # the decoder's counts (decode_info)


def build_stages(config: PipelineConfig) -> Stages:
    """The decoder and the augmentation of ``config``, joined by what both sides declare (see
    :func:`handoff`): a native image object goes straight into the augmentation; otherwise the
    decoded array goes through ``make_input`` into the form the augmentation takes. An array
    payload (a format that stores decoded pixels) goes through ``make_input`` either way."""
    from imgbench.readers.registry import build_reader, find_spec

    if config.crop_decode != FULL_DECODE:
        from imgbench.loaders.crop_decode import crop_stages

        window_decode, rest, counts = crop_stages(config)
        return Stages(window_decode, rest, ARRAY, counts)
    library, variant = config.decoder.split("/", 1)
    reader = build_reader(find_spec(library, variant))
    if config.augment == NO_AUGMENT:
        return Stages(reader.decode, np.ascontiguousarray, ARRAY)
    if config.task != CLASSIFICATION:
        return _task_stages(config, reader.decode)
    from imgbench.augment.base import make_input
    from imgbench.augment.registry import get_library

    augment_library = get_library(config.augment)
    fn = augment_library.pipelines()[config.recipe]().fn
    kind = augment_library.pipeline_input
    if handoff(config) != ARRAY:

        def augment_native(image: Any) -> Any:
            return fn(make_input(image, kind) if isinstance(image, np.ndarray) else image)

        return Stages(cast("NativeReader", reader).decode_native, augment_native, kind)

    def augment(image: np.ndarray) -> Any:
        return fn(make_input(image, kind))

    return Stages(reader.decode, augment, ARRAY)


def _task_stages(config: PipelineConfig, decode: Callable[[bytes], np.ndarray]) -> Stages:
    """A task's stages: segmentation decodes the image with the decoder and the mask with
    Pillow (palette, grey or colours through the table; ``MaskError`` names a bad one) and hands
    both to the recipe; its one-hot mask is part of the recipe's work, but only (image, mask)
    travel. crop-ocr runs its recipe on the decoded image."""
    from imgbench.augment import tasks
    from imgbench.augment.registry import get_library

    op = get_library(config.augment).task_recipes()[config.task]()
    if config.task == CROP_OCR:

        def crop(image: np.ndarray) -> Any:
            return op.fn(tasks.make_sample(image, None, op.sample))

        return Stages(decode, crop, ARRAY)

    def decode_pair(payload: tuple[bytes, bytes, str]) -> tuple[np.ndarray, np.ndarray]:
        image = decode(payload[0])
        mask = decode_mask(payload[1])
        tasks.check_pair(image, mask, "its image", payload[2])
        return image, tasks.mask_indices(mask, payload[2])

    def segment(pair: tuple[np.ndarray, np.ndarray]) -> tuple[Any, Any]:
        out = op.fn(tasks.make_sample(pair[0], pair[1], op.sample))
        return out[0], out[1]

    return Stages(cast("Callable[[Any], Any]", decode_pair), segment, ARRAY)


def decode_mask(data: bytes) -> np.ndarray:
    """A mask file's pixels as stored: HxW indices (palette or grey) or HxWx3 colours."""
    import io

    from PIL import Image

    with Image.open(io.BytesIO(data)) as opened:
        if opened.mode in ("P", "L", "I", "I;16"):
            return np.asarray(opened)
        return np.asarray(opened.convert("RGB"))


def handoff(config: PipelineConfig) -> str:
    """What ``config``'s decoder hands its augmentation: the reader's ``native`` image kind
    (``imgbench.readers.base.NativeReader``) where the augmentation's registry entry takes that
    kind as its pipeline input (``pipeline_input``), else ``ARRAY``. Decided from the two
    declarations, by no name: imports the reader's adapter module, builds nothing. A loader's
    own augmentation graph (tf.data's, MXNet's: no augment registry entry) takes no native
    object from this pipeline: ``ARRAY``, without importing its decoder; so does a task, and a
    crop-aware decode (it hands over the window's array)."""
    from imgbench.augment.registry import libraries

    if config.task != CLASSIFICATION or config.crop_decode != FULL_DECODE:
        return ARRAY

    taker = next((a for a in libraries() if a.key == config.augment), None)
    if taker is None:
        return ARRAY
    from imgbench.attrs import load_attr
    from imgbench.readers.base import native_kind
    from imgbench.readers.registry import find_spec

    library, variant = config.decoder.split("/", 1)
    native = native_kind(load_attr(find_spec(library, variant).adapter))
    return taker.pipeline_input if native == taker.pipeline_input else ARRAY


def collate(samples: list[tuple[Any, int, tuple[float, float, float]]]) -> Batch:
    """Stack a batch into one contiguous tensor (in shared memory inside a DataLoader worker)."""
    import torch
    from torch.utils.data import default_collate

    start = clock()
    tensors = [torch.from_numpy(s[0]) if isinstance(s[0], np.ndarray) else s[0] for s in samples]
    stacked = default_collate(tensors)
    labels, stage_s = _labels_and_times(samples)
    return stacked, labels, stage_s, clock() - start


def collate_list(samples: list[tuple[Any, int, tuple[float, float, float]]]) -> Batch:
    """Pass-through: the decoded arrays (any size) as a list, as a decode-only loader returns them."""
    start = clock()
    images = [s[0] for s in samples]
    labels, stage_s = _labels_and_times(samples)
    return images, labels, stage_s, clock() - start


def _labels_and_times(
    samples: list[tuple[Any, int, tuple[float, float, float]]],
) -> tuple[Any, Any]:
    import torch

    labels = torch.tensor([s[1] for s in samples], dtype=torch.int64)
    stage_s = torch.tensor([s[2] for s in samples], dtype=torch.float64)
    return labels, stage_s


def collate_pairs(samples: list[tuple[Any, int, tuple[float, float, float]]]) -> Batch:
    """Segmentation: (B x 3 x H x W float32 images, B x H x W int64 masks)."""
    import torch
    from torch.utils.data import default_collate

    start = clock()
    images = default_collate([_tensor(s[0][0]) for s in samples])
    masks = default_collate([_tensor(s[0][1]) for s in samples])
    _, stage_s = _labels_and_times(samples)
    return images, masks.to(torch.int64), stage_s, clock() - start


def collate_heads(
    samples: list[tuple[Any, int, tuple[float, float, float]]], classes: int
) -> Batch:
    """crop-ocr: (B x 32 x 128 x 3 float32 images, B x heads x classes float32 one-hot), the
    heads one-hot encoded here, per batch, with Keras' ``to_categorical`` recipe."""
    import torch
    from torch.utils.data import default_collate

    from imgbench.augment.tasks import to_categorical

    start = clock()
    images = default_collate([_tensor(s[0]) for s in samples])
    heads, stage_s = _labels_and_times(samples)
    labels = heads.numpy()
    begin = clock()
    onehot = np.stack([to_categorical(labels[:, k], classes) for k in range(labels.shape[1])], 1)
    onehot_s = clock() - begin
    return images, torch.from_numpy(onehot), stage_s, CollateSeconds.of(clock() - start, onehot_s)


class CollateSeconds(float):
    """A batch's collate seconds carrying the part spent one-hot encoding its label heads
    (crop-ocr), so the row can give the one-hot cost per batch while a batch keeps its four
    fields; a plain float to everything else (it pickles from a worker with its part)."""

    onehot_s: float | None = None

    @classmethod
    def of(cls, seconds: float, onehot_s: float) -> CollateSeconds:
        out = cls(seconds)
        out.onehot_s = onehot_s
        return out


def _tensor(value: Any) -> Any:
    import torch

    return torch.from_numpy(value) if isinstance(value, np.ndarray) else value


def collate_for(config: PipelineConfig, classes: int | None = None) -> Any:
    """The collate of ``config``'s batches (crop-ocr: ``classes`` per head, default the seed's)."""
    import functools

    if config.augment == NO_AUGMENT:
        return collate_list
    if config.task == SEGMENTATION:
        return collate_pairs
    if config.task == CROP_OCR:
        from imgbench.augment.tasks import OCR_CLASSES

        return functools.partial(collate_heads, classes=classes or OCR_CLASSES)
    return collate


def force(batch: Batch) -> Any:
    """What the training step would touch: a contiguous tensor (or every array of a list)."""
    images = batch[0]
    if isinstance(images, list):
        return [np.ascontiguousarray(x) for x in images]
    if hasattr(images, "contiguous"):
        return images.contiguous()
    return images  # e.g. an eager TensorFlow tensor: already materialised


def batch_images(batch: Batch) -> int:
    return len(batch[1])
