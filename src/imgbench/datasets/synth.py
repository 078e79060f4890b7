"""Photo-like synthetic images at the speed of the JPEG encoder, deterministic, in constant memory.

What the images look like (a layered scene calibrated against real photos) is
``imgbench.datasets.scene``; how each image is cut cheaply from a few scenes rendered once per
worker is ``imgbench.datasets.bank``; how busy they are (``--detail``) is
``imgbench.datasets.detail``. This module draws sizes, encodes, and spreads the work over every
core, each worker writing its own files, so the main process holds only a bounded window of
names.
"""

from __future__ import annotations

import bisect
import csv
import io
import itertools
import os
import random
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image

from . import bank
from .detail import MAX_LEVEL
from .parallel import WorkerPool, cpu_count
from .writer import BackgroundWriter

# Bump when the rendered pixels or the encoding change: recipes built with older code are rebuilt.
# 2: images are windows of texture banks (imgbench.datasets.bank), with a detail level.
VERSION = 2

CODEC_EXTENSIONS = {"jpeg": ".jpg", "png": ".png", "webp": ".webp", "bmp": ".bmp", "tiff": ".tif"}
SUBSAMPLING = {"444": 0, "422": 1, "420": 2}

# Images per task sent to a worker: enough to make the pool's per-task cost negligible.
TASK_IMAGES = 32


@dataclass(frozen=True)
class SynthSpec:
    """Everything that decides the bytes of every image: same spec, same dataset."""

    n: int
    size: tuple[int, int] | None = None  # (width, height); None with sizes="imagenet"
    sizes: str | None = None  # "imagenet" draws sizes from an ImageNet-like distribution
    codec: str = "jpeg"
    quality: int = 90
    subsampling: str = "420"
    classes: int = 10
    seed: int = 0
    detail: float = 1.0  # 1.0: like the real sample; see imgbench.datasets.detail

    def __post_init__(self) -> None:
        if self.n < 1:
            raise ValueError("n must be at least 1")
        if self.codec not in CODEC_EXTENSIONS:
            raise ValueError(f"codec must be one of {', '.join(CODEC_EXTENSIONS)}")
        if self.subsampling not in SUBSAMPLING:
            raise ValueError(f"subsampling must be one of {', '.join(SUBSAMPLING)}")
        if not 1 <= self.quality <= 100:
            raise ValueError("quality must be between 1 and 100")
        if self.classes < 1:
            raise ValueError("classes must be at least 1")
        if (self.size is None) == (self.sizes is None):
            raise ValueError("give exactly one of size=(W, H) or sizes='imagenet'")
        if self.sizes is not None and self.sizes != "imagenet":
            raise ValueError("sizes must be 'imagenet'")
        if self.size is not None and (self.size[0] < 8 or self.size[1] < 8):
            raise ValueError("size must be at least 8x8")
        if not 0 <= self.detail <= MAX_LEVEL:
            raise ValueError(f"detail level must be between 0 and {MAX_LEVEL:g}")


def parse_size(text: str) -> tuple[int, int]:
    """'640x480' -> (640, 480)."""
    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise ValueError(f"size must look like WIDTHxHEIGHT, e.g. 500x375, not {text!r}") from None
    return w, h


def _pick(rng: random.Random, values: Sequence[float], weights: Sequence[float]) -> float:
    return values[bisect.bisect(list(itertools.accumulate(weights)), rng.random() * sum(weights))]


def imagenet_size(rng: random.Random) -> tuple[int, int]:
    """An ImageNet-like (width, height): mostly 500x375-ish, short side 300-500, a tail of large.

    ``random.Random`` rather than numpy: a few microseconds per image instead of ~50, which
    mattered once the rest of an image cost a fraction of a millisecond.
    """
    u = rng.random()
    if u < 0.55:  # the classic Flickr 500 px long edge
        long_edge = 500
        short = int(_pick(rng, [375, 333, 334, 281, 400, 500], [0.55, 0.2, 0.05, 0.05, 0.05, 0.1]))
    elif u < 0.92:  # short side spread over 300-500
        short = rng.randrange(300, 501)
        long_edge = int(short * _pick(rng, [4 / 3, 3 / 2, 1.0, 16 / 9], [0.5, 0.3, 0.1, 0.1]))
    else:  # the tail of large photos
        long_edge = rng.randrange(800, 2600)
        short = int(long_edge / _pick(rng, [4 / 3, 3 / 2], [0.5, 0.5]))
    landscape = rng.random() < 0.78
    return (long_edge, short) if landscape else (short, long_edge)


def render(spec: SynthSpec, index: int) -> Image.Image:
    """Image ``index`` of ``spec`` (RGBX, read-only): a pure function of the spec and the index."""
    width, height = image_size(spec, index)
    return bank.compose(spec.seed, index, width, height, spec.detail)


def encode(image: Image.Image | np.ndarray, codec: str, quality: int, subsampling: str) -> bytes:
    """Encode with fixed settings so that the same pixels always give the same bytes."""
    if isinstance(image, np.ndarray):
        image = Image.fromarray(image)
    elif image.mode == "RGBX" and codec != "jpeg":  # JPEG reads RGBX as RGB; others need RGB
        image = image.convert("RGB")
    buffer = io.BytesIO()
    if codec == "jpeg":
        image.save(
            buffer, "JPEG", quality=quality, subsampling=SUBSAMPLING[subsampling], optimize=False
        )
    elif codec == "png":
        image.save(buffer, "PNG", compress_level=6)
    elif codec == "webp":
        image.save(buffer, "WEBP", quality=quality, method=4)
    elif codec == "bmp":
        image.save(buffer, "BMP")
    else:
        image.save(buffer, "TIFF", compression="tiff_adobe_deflate")
    return buffer.getvalue()


def image_size(spec: SynthSpec, index: int) -> tuple[int, int]:
    if spec.size is not None:
        return spec.size
    return imagenet_size(random.Random(f"{spec.seed}:{index}:sizes"))  # str seeds: sha512


def relative_path(spec: SynthSpec, index: int) -> str:
    label = index % spec.classes
    return f"class_{label:03d}/{index:08d}{CODEC_EXTENSIONS[spec.codec]}"


def make_images(job: tuple[SynthSpec, str, int, int, str | None]) -> list[str]:
    """Render, encode and write images ``start``..``stop`` of ``spec``; their relative paths.

    ``banks``: a folder of banks built once for all workers (or None: build them here)."""
    spec, out, start, stop, banks = job
    bank.use_shared(Path(banks) if banks else None)
    names = []
    with BackgroundWriter() as writer:  # a write that sleeps does not stop the encoder
        for index in range(start, stop):
            data = encode(render(spec, index), spec.codec, spec.quality, spec.subsampling)
            rel = relative_path(spec, index)
            writer.put(Path(out) / rel, data)
            names.append(rel)
    return names


def generate(
    out: Path,
    n: int,
    *,
    size: tuple[int, int] | None = None,
    sizes: str | None = None,
    codec: str = "jpeg",
    quality: int = 90,
    subsampling: str = "420",
    classes: int = 10,
    seed: int = 0,
    detail: float = 1.0,
    workers: int | None = None,
    progress: bool = True,
) -> Path:
    """Write ``n`` images in ImageFolder layout plus ``labels.csv`` into ``out``; returns ``out``.

    Workers write the files themselves and return only their names, so memory stays flat in
    ``n``; ``labels.csv`` is streamed in index order.
    """
    spec = SynthSpec(n, size, sizes, codec, quality, subsampling, classes, seed, detail)
    out = Path(out)
    for label in range(min(classes, n)):
        (out / f"class_{label:03d}").mkdir(parents=True, exist_ok=True)
    n_workers = max(1, min(workers or cpu_count(), n // 16 or 1))
    task = max(1, min(TASK_IMAGES, n // (n_workers * 4) or 1))
    from tqdm import tqdm

    labels_tmp = out / ".labels.csv.tmp"
    banks: str | None = None
    try:
        with (
            WorkerPool(n_workers) as pool,  # one pool start for the banks and the images
            labels_tmp.open("w", newline="") as handle,
            tqdm(total=n, desc=f"synth {out.name}", unit="img", disable=not progress) as bar,
        ):
            banks = _shared_banks(spec, out, pool)
            jobs: Iterator[tuple[SynthSpec, str, int, int, str | None]] = (
                (spec, str(out), start, min(n, start + task), banks) for start in range(0, n, task)
            )
            writer = csv.writer(handle)
            writer.writerow(["path", "label"])
            for names in pool.imap(make_images, jobs, chunksize=1):
                writer.writerows([rel, rel.split("/", 1)[0]] for rel in names)
                bar.update(len(names))
    finally:
        bank.clear()  # banks built or mapped in this process (serial runs)
        bank.use_shared(None)
        if banks:
            shutil.rmtree(banks, ignore_errors=True)
    os.replace(labels_tmp, out / "labels.csv")
    return out


def possible_sizes(spec: SynthSpec) -> list[tuple[int, int]]:
    """Every long edge the spec can draw (as landscape sizes): enough to know its tiers."""
    if spec.size is not None:
        return [spec.size]
    return [(edge, 1) for edge in range(281, 2600)]


def _shared_banks(spec: SynthSpec, out: Path, pool: WorkerPool) -> str | None:
    """With several workers, build every bank the spec needs once, spread over the workers, into
    a folder that the workers map (instead of each rendering all of them): in shared memory
    (``/dev/shm``) where there is one, else hidden in ``out``; removed when done."""
    if pool.workers <= 1:
        return None
    shm = Path("/dev/shm")
    parent = shm if shm.is_dir() and os.access(shm, os.W_OK) else out
    folder = Path(tempfile.mkdtemp(prefix=".imgbench-banks-", dir=parent))
    jobs = [
        (str(folder), spec.seed, spec.detail, side, k)
        for side in bank.tiers(possible_sizes(spec))
        for k in range(bank.banks_per_tier(side))
    ]
    try:
        for _ in pool.imap(bank.save, iter(jobs), chunksize=1):
            pass
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return str(folder)
