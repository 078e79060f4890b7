"""The content-detail knob: how busy generated images are, hence their bytes per megapixel.

Bytes per megapixel differ 2x between real photo sets at the same quality (smooth landscapes
near 130 KB/MP at q90, the project's real sample near 260), and decode speed follows the
entropy. ``--detail`` takes a preset (``low``, ``medium``, ``high``), a detail level (a number,
1.0 = ``medium``), or a target size: ``250kb`` (KB per megapixel at the dataset's quality) or
``250kb@q75``. A target is solved by bisection on the detail level over the dataset's own first
500x375 images (ImageNet's commonest size): the same windows of the same banks the generator
cuts for that seed, whose layers are rendered once and mixed again per level (milliseconds per
step). The same target and seed always give the same level.
"""

from __future__ import annotations

import functools
import io
import re

import numpy as np
from PIL import Image

from .bank import place, scene
from .scene import Layers

# Levels measured on this generator (docs/datasets.md has the KB/MP they give at q75/q90/q95).
PRESETS = {"low": 0.3, "medium": 1.0, "high": 2.6}
MAX_LEVEL = 8.0

_TARGET = re.compile(r"^(\d+(?:\.\d+)?)\s*kb(?:\s*@\s*q?(\d{1,3}))?$", re.IGNORECASE)

# The calibration images: the dataset's first images at 500x375 (ImageNet's commonest size).
_WINDOW = (500, 375)
_IMAGES = 32


def parse_detail(text: str | float, quality: int = 90, seed: int = 0) -> float:
    """A detail level from a preset name, a number, or ``NNNkb[@qQ]`` (at ``quality``)."""
    if isinstance(text, int | float):
        level = float(text)
    else:
        value = text.strip().lower()
        match = _TARGET.match(value)
        if value in PRESETS:
            level = PRESETS[value]
        elif match:
            target_quality = int(match.group(2)) if match.group(2) else quality
            return level_for(float(match.group(1)), target_quality, seed)
        else:
            try:
                level = float(value)
            except ValueError:
                raise ValueError(
                    f"detail must be low, medium, high, a level (1.0 = medium) or a size per "
                    f"megapixel like 250kb or 250kb@q90, not {text!r}"
                ) from None
    if not 0 <= level <= MAX_LEVEL:
        raise ValueError(f"detail level must be between 0 and {MAX_LEVEL:g}, not {level:g}")
    return level


@functools.lru_cache(maxsize=1)  # ~150 MB of float layers: level_for drops them
def _calibration_windows(seed: int) -> tuple[Layers, ...]:
    """The layers of images 0.._IMAGES of ``seed`` at 500x375, as the generator cuts them."""
    w, h = _WINDOW
    scenes: dict[int, Layers] = {}
    windows = []
    for index in range(_IMAGES):
        side, k, x, y = place(seed, index, w, h)
        if k not in scenes:
            scenes[k] = scene(seed, side, k)
        layers = scenes[k]
        windows.append(
            Layers(*(a[y : y + h, x : x + w] for a in (layers.base, layers.texture, layers.noise)))
        )
    return tuple(windows)


def kb_per_mp(level: float, quality: int, seed: int = 0) -> float:
    """Median JPEG (4:2:0) KB per megapixel of the calibration images at ``level``."""
    w, h = _WINDOW
    sizes = []
    for layers in _calibration_windows(seed):
        buffer = io.BytesIO()
        Image.fromarray(layers.pixels(level)).save(buffer, "JPEG", quality=quality, subsampling=2)
        sizes.append(len(buffer.getvalue()) / 1e3 / (w * h / 1e6))
    return float(np.median(sizes))


@functools.lru_cache(maxsize=64)
def level_for(target_kb_per_mp: float, quality: int, seed: int = 0) -> float:
    """The detail level whose calibration windows give ``target_kb_per_mp`` at ``quality``."""
    if not 1 <= quality <= 100:
        raise ValueError(f"quality must be between 1 and 100, not {quality}")
    low, high = 0.0, MAX_LEVEL
    floor, ceiling = kb_per_mp(low, quality, seed), kb_per_mp(high, quality, seed)
    if not floor <= target_kb_per_mp <= ceiling:
        raise ValueError(
            f"detail target {target_kb_per_mp:g} KB/MP at q{quality} is out of reach: "
            f"this generator spans {floor:.0f}-{ceiling:.0f} KB/MP at that quality"
        )
    for _ in range(14):
        mid = (low + high) / 2
        if kb_per_mp(mid, quality, seed) < target_kb_per_mp:
            low = mid
        else:
            high = mid
    _calibration_windows.cache_clear()
    return round((low + high) / 2, 3)
