"""Photo-like synthetic images: deterministic, fast, and compressing like real photos.

Noise images compress far worse than photos and flat images far better, so decoders, formats and
loaders would be measured on the wrong bytes. Each image here is layered like a scene: a sky and
ground gradient, smooth colour regions, objects with soft edges, texture whose spectrum falls as
1/f^2 (the statistics of natural images) with an amplitude that varies across the frame, and
sensor noise. The texture and noise amplitudes are calibrated so that JPEG bytes per megapixel
at a given quality land near those of the real photos in the shipped sample (a test checks it).
"""

from __future__ import annotations

import csv
import io
import math
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFilter

from .parallel import cpu_count, imap

# Bump when the rendered pixels or the encoding change: recipes built with older code are rebuilt.
VERSION = 1

CODEC_EXTENSIONS = {"jpeg": ".jpg", "png": ".png", "webp": ".webp", "bmp": ".bmp", "tiff": ".tif"}
SUBSAMPLING = {"444": 0, "422": 1, "420": 2}

# Calibrated against the natural colour photos of the real sample at q90 (see tests/datasets).
TEXTURE_STRENGTH = 30.0
NOISE_SIGMA = 2.2


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


def parse_size(text: str) -> tuple[int, int]:
    """'640x480' -> (640, 480)."""
    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise ValueError(f"size must look like WIDTHxHEIGHT, e.g. 500x375, not {text!r}") from None
    return w, h


def imagenet_size(rng: np.random.Generator) -> tuple[int, int]:
    """An ImageNet-like (width, height): mostly 500x375-ish, short side 300-500, a tail of large."""
    u = rng.random()
    if u < 0.55:  # the classic Flickr 500 px long edge
        long_edge, short = (
            500,
            int(rng.choice([375, 333, 334, 281, 400, 500], p=[0.55, 0.2, 0.05, 0.05, 0.05, 0.1])),
        )
    elif u < 0.92:  # short side spread over 300-500
        short = int(rng.integers(300, 501))
        long_edge = int(short * rng.choice([4 / 3, 3 / 2, 1.0, 16 / 9], p=[0.5, 0.3, 0.1, 0.1]))
    else:  # the tail of large photos
        long_edge = int(rng.integers(800, 2600))
        short = int(long_edge / rng.choice([4 / 3, 3 / 2]))
    landscape = rng.random() < 0.78
    return (long_edge, short) if landscape else (short, long_edge)


def _smooth_field(
    rng: np.random.Generator, w: int, h: int, cells: int, channels: int
) -> np.ndarray:
    """Random values on a coarse grid, upsampled bicubically: smooth regions of colour."""
    gh, gw = max(2, cells * h // max(w, h)), max(2, cells * w // max(w, h))
    coarse = rng.random((gh, gw, channels)).astype(np.float32)
    layers = [
        np.asarray(
            Image.fromarray(coarse[..., c], mode="F").resize((w, h), Image.Resampling.BICUBIC)
        )
        for c in range(channels)
    ]
    return np.stack(layers, axis=-1)


def _pink_texture(rng: np.random.Generator, w: int, h: int) -> np.ndarray:
    """Zero-mean texture with a 1/f^2 power spectrum, unit standard deviation.

    White Gaussian noise shaped in the frequency domain: random phases and Rayleigh amplitudes,
    in float32 throughout (this is the generator's hottest step).
    """
    from scipy import fft

    fy = np.fft.fftfreq(h).astype(np.float32)[:, None]
    fx = np.fft.rfftfreq(w).astype(np.float32)[None, :]
    radius = np.sqrt(fx * fx + fy * fy)
    radius[0, 0] = 1.0
    shape = (h, w // 2 + 1)
    spectrum = rng.standard_normal(shape, dtype=np.float32) + 1j * rng.standard_normal(
        shape, dtype=np.float32
    )
    spectrum /= radius
    spectrum[0, 0] = 0.0
    texture = fft.irfft2(spectrum.astype(np.complex64), s=(h, w), workers=1)
    return texture / (texture.std() + 1e-6)


def render(seed: int, index: int, width: int, height: int) -> np.ndarray:
    """The pixels of image ``index``: HxWx3 uint8, a pure function of its arguments."""
    rng = np.random.default_rng([seed, index, 0x1B])
    w, h = width, height
    # sky / ground: two colours, a soft horizon at a random height
    top, bottom = rng.uniform(30, 230, 3), rng.uniform(20, 200, 3)
    horizon = rng.uniform(0.3, 0.7)
    ramp = 1 / (1 + np.exp(-(np.linspace(0, 1, h)[:, None] - horizon) * rng.uniform(6, 30)))
    base = top * (1 - ramp[..., None]) + bottom * ramp[..., None]
    base = np.broadcast_to(base, (h, w, 3)).astype(np.float32)
    # smooth colour regions
    base += (_smooth_field(rng, w, h, int(rng.integers(3, 8)), 3) - 0.5) * rng.uniform(40, 110)
    # objects with edges: ellipses and polygons, each with a flat colour, drawn on one layer
    canvas = Image.fromarray(np.clip(base, 0, 255).astype(np.uint8))
    draw = ImageDraw.Draw(canvas)
    for _ in range(int(rng.integers(4, 14))):
        colour = tuple(int(v) for v in rng.uniform(0, 255, 3))
        cx, cy = rng.uniform(0, w), rng.uniform(0, h)
        rx, ry = rng.uniform(0.03, 0.3) * w, rng.uniform(0.03, 0.3) * h
        if rng.random() < 0.5:
            draw.ellipse([cx - rx, cy - ry, cx + rx, cy + ry], fill=colour)
        else:
            k = int(rng.integers(3, 8))
            angles = np.sort(rng.uniform(0, 2 * math.pi, k))
            points = [(cx + rx * math.cos(a), cy + ry * math.sin(a)) for a in angles]
            draw.polygon(points, fill=colour)
    canvas = canvas.filter(ImageFilter.BoxBlur(radius=float(rng.uniform(0.6, 1.6))))
    pixels = np.asarray(canvas, dtype=np.float32)
    # natural texture, stronger in some regions than others (foliage vs sky)
    mask = _smooth_field(rng, w, h, 4, 1)[..., 0] ** 2
    texture = _pink_texture(rng, w, h)
    tint = rng.uniform(0.7, 1.3, 3).astype(np.float32)
    pixels += (texture * mask * TEXTURE_STRENGTH)[..., None] * tint
    # sensor noise
    pixels += rng.standard_normal(pixels.shape, dtype=np.float32) * np.float32(NOISE_SIGMA)
    return np.clip(pixels + 0.5, 0, 255).astype(np.uint8)


def encode(pixels: np.ndarray, codec: str, quality: int, subsampling: str) -> bytes:
    """Encode with fixed settings so that the same pixels always give the same bytes."""
    image = Image.fromarray(pixels)
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
    return imagenet_size(np.random.default_rng([spec.seed, index, 0x51]))


def relative_path(spec: SynthSpec, index: int) -> str:
    label = index % spec.classes
    return f"class_{label:03d}/{index:08d}{CODEC_EXTENSIONS[spec.codec]}"


def _make_one(job: tuple[SynthSpec, str, int]) -> tuple[str, int, int]:
    spec, out, index = job
    width, height = image_size(spec, index)
    data = encode(
        render(spec.seed, index, width, height), spec.codec, spec.quality, spec.subsampling
    )
    rel = relative_path(spec, index)
    (Path(out) / rel).write_bytes(data)
    return rel, index % spec.classes, len(data)


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
    workers: int | None = None,
    progress: bool = True,
) -> Path:
    """Write ``n`` images in ImageFolder layout plus ``labels.csv`` into ``out``; returns ``out``.

    Workers write the files themselves and return only their names, so memory stays flat in
    ``n``; ``labels.csv`` is streamed in index order.
    """
    spec = SynthSpec(n, size, sizes, codec, quality, subsampling, classes, seed)
    out = Path(out)
    for label in range(min(classes, n)):
        (out / f"class_{label:03d}").mkdir(parents=True, exist_ok=True)
    n_workers = max(1, min(workers or cpu_count(), n // 16 or 1))
    jobs: Iterator[tuple[SynthSpec, str, int]] = ((spec, str(out), i) for i in range(n))
    from tqdm import tqdm

    labels_tmp = out / ".labels.csv.tmp"
    with (
        labels_tmp.open("w", newline="") as handle,
        tqdm(total=n, desc=f"synth {out.name}", unit="img", disable=not progress) as bar,
    ):
        writer = csv.writer(handle)
        writer.writerow(["path", "label"])
        for rel, label, _ in imap(_make_one, jobs, workers=n_workers, chunksize=8):
            writer.writerow([rel, f"class_{label:03d}"])
            bar.update()
    os.replace(labels_tmp, out / "labels.csv")
    return out
