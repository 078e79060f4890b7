"""MXNet's ``ImageRecordIter`` over a ``.rec/.idx`` it writes: the im2rec input path in C++.

Runs in the ``mxnet`` environment (``imgbench env create mxnet``, MXNet 1.9.1 on numpy 1.23.5).
The pool is packed once, untimed, with ``mx.recordio.MXIndexedRecordIO`` (one record per image:
``IRHeader(flag=0, label, id=i, id2=0)`` + the file's bytes, as im2rec packs them without
re-encoding) into a temporary folder removed on close; each file is decoded once with
``mx.image.imdecode`` first and a file MXNet cannot use (zero bytes, undecodable, a JPEG cut
before its end-of-image marker, which libjpeg decodes silently to grey rows) is left out and
named in ``extra["recordio_skipped"]``, as im2rec skips an unreadable image. Fewer good images
than a batch fails the case, naming them.

``ImageRecordIter`` then reads, decodes (OpenCV) and augments on ``preprocess_threads`` OpenMP
threads (the case's ``workers``, swept like the thread-pool loaders) with a prefetch thread of
4 batches. The train recipe of ``imgbench.augment.spec`` in its options: ``random_resized_crop``
with area 8-100% (``min/max_random_area``) and aspect 3/4..4/3 (``min/max_aspect_ratio``,
sampled uniformly, not log-uniformly; width and height swapped half the time; after 10 misses
a centre crop of 224 without resizing), resized to 224 x 224 with ``inter_method=9`` (area when
shrinking, bicubic when enlarging, bilinear otherwise) -> brightness, contrast and saturation
factors uniform in 1 -/+ 0.4 in a random order (ColorJitter's), -> ``random_h=18`` (hue -/+ 18
of OpenCV's 180 = 36 degrees, clamped rather than wrapped, drawn from a mean of uniforms) ->
``rand_mirror`` -> ImageNet ``mean_r/g/b`` and ``std_r/g/b`` on the 0..255 scale -> float32,
B x 3 x 224 x 224. Batches come out as NDArrays; ``asnumpy()`` and the labels' cast to int64
(the Batch of ``imgbench.loaders.base``) are inside the timing. The C++ threads cannot time
their parts: ``stage_s`` is None, as tf.data's.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import warnings
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from imgbench.augment import spec
from imgbench.augment.base import IMAGENET_MEAN, IMAGENET_STD
from imgbench.loaders.base import Batch, LoaderError, clock
from imgbench.loaders.pipeline import SamplePipeline

LIBRARY = "mxnet-recordio"
PREFETCH_BATCHES = 4  # ImageRecordIter's prefetch_buffer default
HUE_OPENCV = round(spec.JITTER[3] * 180)  # OpenCV's 8-bit hue runs 0..180 for 360 degrees
INTER_AUTO = 9  # area when shrinking, bicubic when enlarging, bilinear otherwise
NAMED_BAD = 10  # bad files named in an error; the rest counted
JPEG_SOI, JPEG_SOS, JPEG_EOI = b"\xff\xd8", b"\xff\xda", b"\xff\xd9"
MAGIC = {b"\x89PNG": "PNG", b"\xff\xd8\xff": "JPEG", b"BM": "BMP", b"II*\x00": "TIFF"}


def recipe_options() -> dict[str, Any]:
    """ImageRecordIter's options for the train recipe (see the module's docstring)."""
    brightness, contrast, saturation, _ = spec.JITTER
    mean = [255 * m for m in IMAGENET_MEAN]
    std = [255 * s for s in IMAGENET_STD]
    return {
        "data_shape": (3, spec.SIZE, spec.SIZE),
        "random_resized_crop": True,
        "min_random_area": spec.RRC_SCALE[0],
        "max_random_area": spec.RRC_SCALE[1],
        "min_aspect_ratio": spec.RRC_RATIO[0],
        "max_aspect_ratio": spec.RRC_RATIO[1],
        "inter_method": INTER_AUTO,
        "brightness": brightness,
        "contrast": contrast,
        "saturation": saturation,
        "random_h": HUE_OPENCV,
        "rand_mirror": True,
        "mean_r": mean[0],
        "mean_g": mean[1],
        "mean_b": mean[2],
        "std_r": std[0],
        "std_g": std[1],
        "std_b": std[2],
        "dtype": "float32",
    }


def import_mxnet() -> Any:
    """``import mxnet``, without the DeprecationWarning its ``mxnet.numpy`` gives for the
    ``np.bool`` alias (numpy 1.23 still has it; 1.24 removed it, hence the env's pin)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import mxnet

    return mxnet


def _one_line(exc: BaseException) -> str:
    """The last line of an MXNetError (its first lines are a C++ traceback header)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[-1] if lines else type(exc).__name__


def content_kind(data: bytes) -> str | None:
    """The codec the bytes start with (what OpenCV decodes them as), or None."""
    return next((kind for magic, kind in MAGIC.items() if data.startswith(magic)), None)


def truncated_jpeg(data: bytes) -> bool:
    """A JPEG with no end-of-image marker after its last scan: cut short. libjpeg decodes it
    without an error, the missing rows grey. (Inside a scan 0xFF is always stuffed, so the
    marker cannot appear by chance.)"""
    return data.startswith(JPEG_SOI) and data.rfind(JPEG_EOI) < data.rfind(JPEG_SOS)


def file_problem(mx: Any, data: bytes) -> str | None:
    """Why MXNet cannot use these bytes as an image, or None."""
    if not data:
        return "zero-byte file"
    if truncated_jpeg(data):
        return "truncated JPEG (no end-of-image marker after its last scan)"
    try:
        mx.image.imdecode(data, flag=1).wait_to_read()
    except mx.base.MXNetError as exc:
        return f"mx.image.imdecode cannot decode it: {_one_line(exc)}"
    return None


class MxRecordIOLoader:
    def __init__(self, pipeline: SamplePipeline, params: Mapping[str, Any]) -> None:
        self.mx = import_mxnet()
        self.pipeline = pipeline
        self.batch_size = int(params["batch_size"])
        self.threads = max(1, int(params.get("workers") or 0))
        if pipeline.config.format != "recordio":
            raise ValueError(f"{LIBRARY} writes and reads recordio, not {pipeline.config.format!r}")
        source = pipeline.source
        self.paths = [Path(p.decode() if isinstance(p, bytes) else p) for p in source.paths]
        self.labels = np.asarray(source.labels, dtype=np.int64)
        self.extra: dict[str, Any] = {
            "preprocess_threads": self.threads,
            "prefetch_buffer": PREFETCH_BATCHES,
            "image_record_iter": {k: _jsonable(v) for k, v in recipe_options().items()},
        }
        self._tmp: Path | None = Path(tempfile.mkdtemp(prefix="imgbench-mxnet-rec-"))
        self.extra["recordio_dir"] = str(self._tmp)  # removed on close
        self._iter: Any = None
        try:
            self.rec, self.idx = self._write()
        except BaseException:
            self.close()
            raise

    def _write(self) -> tuple[Path, Path]:
        """The pool as one indexed RecordIO file, written by MXNet (untimed); bad files left out
        and named."""
        mx = self.mx
        assert self._tmp is not None
        rec, idx = self._tmp / "data.rec", self._tmp / "data.idx"
        skipped: list[str] = []
        by_content: list[str] = []
        start = clock()
        writer = mx.recordio.MXIndexedRecordIO(str(idx), str(rec), "w")
        packed = 0
        try:
            for path, label in zip(self.paths, self.labels, strict=True):
                try:
                    data = path.read_bytes()
                except OSError as exc:
                    skipped.append(f"{path}: unreadable ({exc.strerror or exc})")
                    continue
                problem = file_problem(mx, data)
                if problem is not None:
                    skipped.append(f"{path}: {problem}")
                    continue
                kind = content_kind(data)
                if kind is not None and _suffix_kind(path) not in (None, kind):
                    by_content.append(f"{path}: {kind} content under a {path.suffix} name")
                header = mx.recordio.IRHeader(0, float(label), packed, 0)
                writer.write_idx(packed, mx.recordio.pack(header, data))
                packed += 1
        finally:
            writer.close()
        self.extra.update(
            recordio_write_s=clock() - start,
            recordio_bytes=rec.stat().st_size + idx.stat().st_size,
            recordio_records=packed,
            recordio_written_by="mx.recordio.MXIndexedRecordIO + pack (bytes as stored)",
            recordio_checked_by="mx.image.imdecode, and a JPEG end-of-image marker",
            recordio_skipped=skipped,
            recordio_named_by_content=by_content,
        )
        if skipped:
            print(f"{LIBRARY}: left out {_named(skipped)}", file=sys.stderr)
        if packed < self.batch_size:
            raise LoaderError(
                f"{LIBRARY}: {packed} usable images, fewer than one batch of "
                f"{self.batch_size}; left out {_named(skipped)}"
            )
        return rec, idx

    def _iterator(self) -> Any:
        return self.mx.io.ImageRecordIter(
            path_imgrec=str(self.rec),
            path_imgidx=str(self.idx),
            batch_size=self.batch_size,
            shuffle=True,
            seed=0,
            preprocess_threads=self.threads,
            prefetch_buffer=PREFETCH_BATCHES,
            ctx="cpu",
            verbose=False,
            **recipe_options(),
        )

    def batches(self) -> Iterator[Batch]:
        try:
            self._iter = self._iterator()
        except self.mx.base.MXNetError as exc:
            raise LoaderError(f"{LIBRARY}: ImageRecordIter: {_one_line(exc)}") from None
        return self._stream(self._iter)

    def _stream(self, it: Any) -> Iterator[Batch]:
        mx = self.mx
        while True:
            try:
                batch = it.next()
            except StopIteration:  # an epoch ends: reshuffle and go on
                it.reset()
                continue
            except mx.base.MXNetError as exc:
                raise LoaderError(f"{LIBRARY}: ImageRecordIter: {_one_line(exc)}") from None
            images = batch.data[0].asnumpy()
            labels = batch.label[0].asnumpy().astype(np.int64)
            yield images, labels, None, None

    def worker_pids(self) -> list[int]:
        return []  # OpenMP threads in this process

    def close(self) -> None:
        self._iter = None  # MXDataIterFree stops its threads
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None


def _suffix_kind(path: Path) -> str | None:
    suffix = path.suffix.lower()
    kinds = {".jpg": "JPEG", ".jpeg": "JPEG", ".png": "PNG", ".bmp": "BMP"}
    kinds |= {".tif": "TIFF", ".tiff": "TIFF"}
    return kinds.get(suffix)


def _named(items: list[str]) -> str:
    shown = "; ".join(items[:NAMED_BAD])
    more = len(items) - NAMED_BAD
    return shown + (f"; and {more} more" if more > 0 else "") if items else "no file"


def _jsonable(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def build(pipeline: SamplePipeline, params: Mapping[str, Any]) -> MxRecordIOLoader:
    return MxRecordIOLoader(pipeline, params)
