"""Texture banks: a few rendered scenes per worker, and every image a window of one of them.

Rendering a photo-like scene costs about 20 ms per 500x375 image (an FFT and float layers), 40x
the JPEG encode it feeds. So each worker renders a handful of large scenes once (the banks,
deterministic from the seed, the detail and the size tier) and composes each image as a window
of one, without copying a pixel: banks are kept in Pillow's own 4-byte RGBX layout, and
``Image.frombuffer`` maps a window of rows with the bank's row stride, so the JPEG encoder reads
the bank in place (a ``crop`` copied 0.75 MB per 500x375 image, a third of the time the encoder
itself needs). Portrait images are windows of the bank turned a quarter, kept beside it.
Image *i* is a pure function of ``(seed, i, width, height, detail)``: a hash of ``(seed, i)``
picks the bank and the window, whatever the worker or the number of images.

Banks are kept per process in a small LRU cache, so memory is flat in the number of images:
at most ``MAX_BANKS`` banks, 8 bytes per pixel each with the turned copy (8 MiB at 1024x1024).
"""

from __future__ import annotations

import functools
import hashlib
import os
from collections.abc import Iterable
from pathlib import Path

import numpy as np
from PIL import Image

from .scene import NOISE_SIGMA, Layers, render_layers

MIN_TIER = 256
# Scenes are rendered at most this large (about 0.3 s and 60 MB of float layers on a quiet
# core) and upscaled above, with their sensor noise added again at full resolution.
NATIVE_MAX = 1024
# Room around the largest window of a tier, so that windows start at many offsets.
MARGIN = 1.25
MAX_BANKS = 12
LARGE_TIER = 3072  # a multiple of NATIVE_MAX: upscaled 3x


def tier(width: int, height: int) -> int:
    """Side of the square banks for an image: a power of two >= 1.25 x its long edge, except
    3072 for long edges up to 2816 (ImageNet's largest, 2600 px, would need 4096: nearly twice
    the pixels to render, upscale and hold, for 4% of its images; 256 px of offsets remain)."""
    long_edge = max(width, height)
    need = int(np.ceil(long_edge * MARGIN))
    side = max(MIN_TIER, 1 << (need - 1).bit_length())
    return LARGE_TIER if side > 2048 and long_edge <= LARGE_TIER - 256 else side


def banks_per_tier(side: int) -> int:
    """Distinct scenes per tier: four up to 1024 px, fewer above, where each costs more memory."""
    return 4 if side <= 1024 else 2 if side <= 2048 else 1


def _rgbx(pixels: np.ndarray) -> np.ndarray:
    """HxWx3 -> (H+1)xWx4, C order: Pillow's layout, and one spare row so that a window's last
    row, read with the bank's stride, stays inside the buffer."""
    h, w = pixels.shape[:2]
    out = np.zeros((h + 1, w, 4), dtype=np.uint8)
    out[:h, :, :3] = pixels
    return out


def scene(seed: int, side: int, k: int) -> Layers:
    """The layers of bank ``k`` of the ``side`` tier, at most ``NATIVE_MAX`` px a side."""
    native = min(side, NATIVE_MAX)
    return render_layers(np.random.default_rng([seed, side, k, 0xBA4C]), native, native)


def build(seed: int, detail: float, side: int, k: int) -> np.ndarray:
    """Scene ``k`` of the ``side`` tier, upright and turned a quarter: (2, side+1, side, 4)."""
    layers = scene(seed, side, k)
    pixels = layers.pixels(detail)
    if pixels.shape[0] < side:
        pixels = _upscale(pixels, layers.noise * np.float32(NOISE_SIGMA * detail), side)
    return np.stack([_rgbx(pixels), _rgbx(np.rot90(pixels))])


def bank_file(folder: Path, seed: int, detail: float, side: int, k: int) -> Path:
    return Path(folder) / f"bank-{seed}-{detail!r}-{side}-{k}.npy"


def save(job: tuple[str, int, float, int, int]) -> str:
    """Build one bank into ``folder`` (atomically), for every worker to map: pool-friendly."""
    folder, seed, detail, side, k = job
    path = bank_file(Path(folder), seed, detail, side, k)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    with tmp.open("wb") as handle:
        np.save(handle, build(seed, detail, side, k))
    os.replace(tmp, path)
    return str(path)


_shared: Path | None = None  # where this process finds banks that another process built


def use_shared(folder: Path | None) -> None:
    """Map banks from ``folder`` when they are there (built once by ``save``) instead of
    rendering them in every worker; the pages are shared through the page cache."""
    global _shared
    _shared = folder


@functools.lru_cache(maxsize=MAX_BANKS)
def bank(seed: int, detail: float, side: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Scene ``k`` of the ``side`` tier, upright and turned a quarter (RGBX, rendered once)."""
    path = bank_file(_shared, seed, detail, side, k) if _shared is not None else None
    both = np.load(path, mmap_mode="r") if path is not None and path.is_file() else None
    if both is None:
        both = build(seed, detail, side, k)
    return both[0], both[1]


def tiers(sizes: Iterable[tuple[int, int]]) -> list[int]:
    """The tiers images of these sizes need, largest first (the longest builds start first)."""
    return sorted({tier(w, h) for w, h in sizes}, reverse=True)


def _upscale(pixels: np.ndarray, noise: np.ndarray, side: int) -> np.ndarray:
    """Bicubic to ``side``, then the sensor noise again, tiled: upscaling smooths grain away."""
    image = Image.fromarray(pixels).resize((side, side), Image.Resampling.BICUBIC)
    out = np.array(image)  # writable
    native = noise.shape[0]
    grain = np.tile(np.round(noise).astype(np.int16), (1, side // native, 1))
    for top in range(0, side, native):  # strips: a few MB of int16 at a time
        rows = out[top : top + native]
        strip = rows.astype(np.int16) + grain[: rows.shape[0]]
        np.clip(strip, 0, 255, out=strip)
        rows[...] = strip
    return out


def window(source: np.ndarray, x: int, y: int, width: int, height: int) -> Image.Image:
    """A read-only RGBX image of ``source``'s pixels at (x, y), sharing its memory."""
    stride = source.shape[1] * 4
    flat = source.reshape(-1)
    return Image.frombuffer(
        "RGBX", (width, height), flat[y * stride + x * 4 :], "raw", "RGBX", stride, 1
    )


def _draw(seed: int, index: int) -> tuple[int, float, float]:
    """(bank choice, x fraction, y fraction) from a hash of (seed, index): 1 us, no RNG setup."""
    digest = hashlib.blake2b(f"{seed}:{index}".encode(), digest_size=12).digest()
    k = int.from_bytes(digest[:4], "little")
    fx = int.from_bytes(digest[4:8], "little") / 2**32
    fy = int.from_bytes(digest[8:12], "little") / 2**32
    return k, fx, fy


def place(seed: int, index: int, width: int, height: int) -> tuple[int, int, int, int]:
    """(tier, bank, x, y) of image ``index``: which window of which bank it is."""
    side = tier(width, height)
    k, fx, fy = _draw(seed, index)
    return (
        side,
        k % banks_per_tier(side),
        int(fx * (side - width + 1)),
        int(fy * (side - height + 1)),
    )


def compose(seed: int, index: int, width: int, height: int, detail: float) -> Image.Image:
    """Image ``index`` (``width`` x ``height``, RGBX, read-only): a window of a bank of its tier."""
    side, k, x, y = place(seed, index, width, height)
    upright, turned = bank(seed, detail, side, k)
    return window(turned if height > width else upright, x, y, width, height)


def clear() -> None:
    """Drop this process's banks (the serial generator calls it when done)."""
    bank.cache_clear()
