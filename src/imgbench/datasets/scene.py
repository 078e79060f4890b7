"""One photo-like scene, rendered in layers so that its level of detail can be dialled afterwards.

Noise images compress far worse than photos and flat images far better, so decoders, formats and
loaders would be measured on the wrong bytes. A scene is layered like a photo: a sky and ground
gradient, smooth colour regions, objects with soft edges (the *base*), a texture whose spectrum
falls as 1/f^2 (the statistics of natural images) with an amplitude that varies across the frame,
and sensor noise. Texture and noise are kept apart from the base so that :meth:`Layers.pixels`
can mix them at any detail level without rendering again: that is what makes calibrating a target
size per megapixel cheap (``imgbench.datasets.detail``).

Rendering costs tens of milliseconds per megapixel (the FFT); the generator renders a few scenes
per worker into texture banks (``imgbench.datasets.bank``) and never per image.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from PIL import Image, ImageDraw, ImageFilter

# Detail 1.0: calibrated against the natural colour photos of the real sample at q90 (tests/datasets).
TEXTURE_STRENGTH = 30.0
NOISE_SIGMA = 2.2


@dataclass(frozen=True)
class Layers:
    """A scene's base (HxWx3), texture (HxWx3, zero mean) and noise (HxWx3, unit), float32."""

    base: np.ndarray
    texture: np.ndarray
    noise: np.ndarray

    def pixels(self, detail: float) -> np.ndarray:
        """HxWx3 uint8 at ``detail`` (1.0: like the real sample; 0: no texture and no noise)."""
        out = self.texture * np.float32(TEXTURE_STRENGTH * detail)
        out += self.base
        out += self.noise * np.float32(NOISE_SIGMA * detail)
        out += np.float32(0.5)
        np.clip(out, 0, 255, out=out)
        return out.astype(np.uint8)


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
    in float32 throughout.
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


def render_layers(rng: np.random.Generator, width: int, height: int) -> Layers:
    """The layers of one scene of ``width`` x ``height``: a pure function of the generator state."""
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
    base = np.asarray(canvas, dtype=np.float32)
    # natural texture, stronger in some regions than others (foliage vs sky)
    mask = _smooth_field(rng, w, h, 4, 1)[..., 0] ** 2
    tint = rng.uniform(0.7, 1.3, 3).astype(np.float32)
    texture = (_pink_texture(rng, w, h) * mask)[..., None] * tint
    noise = rng.standard_normal(base.shape, dtype=np.float32)
    return Layers(base, texture.astype(np.float32), noise)
