"""Parameter sampling and geometry for the hand-written baselines (Pillow, OpenCV).

These follow torchvision's definitions (``RandomResizedCrop.get_params``, ``CenterCrop``
rounding, ``_get_inverse_affine_matrix``, ``RandomPerspective.get_params``,
``ColorJitter``'s random order), so the baselines do the same work as the libraries.
"""

from __future__ import annotations

import math
import random

import numpy as np

from imgbench.augment import spec


def rrc_box(width: int, height: int) -> tuple[int, int, int, int]:
    """(left, top, crop width, crop height) as torchvision's RandomResizedCrop samples it."""
    area = width * height
    log_ratio = (math.log(spec.RRC_RATIO[0]), math.log(spec.RRC_RATIO[1]))
    for _ in range(10):
        target = area * random.uniform(*spec.RRC_SCALE)
        ratio = math.exp(random.uniform(*log_ratio))
        w = round(math.sqrt(target * ratio))
        h = round(math.sqrt(target / ratio))
        if 0 < w <= width and 0 < h <= height:
            return random.randint(0, width - w), random.randint(0, height - h), w, h
    in_ratio = width / height
    if in_ratio < spec.RRC_RATIO[0]:
        w, h = width, round(width / spec.RRC_RATIO[0])
    elif in_ratio > spec.RRC_RATIO[1]:
        w, h = round(height * spec.RRC_RATIO[1]), height
    else:
        w, h = width, height
    return (width - w) // 2, (height - h) // 2, w, h


def center_box(width: int, height: int, size: int) -> tuple[int, int]:
    """(left, top) of a centred crop, rounded as torchvision rounds it."""
    return round((width - size) / 2.0), round((height - size) / 2.0)


def random_box(width: int, height: int, size: int) -> tuple[int, int]:
    return random.randint(0, width - size), random.randint(0, height - size)


def short_side_size(width: int, height: int, short: int) -> tuple[int, int]:
    """(new width, new height) with the shorter side ``short``, as torchvision's Resize(int)."""
    if width <= height:
        return short, int(short * height / width)
    return int(short * width / height), short


def erasing_box(width: int, height: int) -> tuple[int, int, int, int] | None:
    """(left, top, w, h) as torchvision's RandomErasing samples it; None when nothing fits."""
    area = width * height
    log_ratio = (math.log(spec.ERASE_RATIO[0]), math.log(spec.ERASE_RATIO[1]))
    for _ in range(10):
        target = area * random.uniform(*spec.ERASE_SCALE)
        ratio = math.exp(random.uniform(*log_ratio))
        h = round(math.sqrt(target * ratio))
        w = round(math.sqrt(target / ratio))
        if h < height and w < width:
            return random.randint(0, width - w), random.randint(0, height - h), w, h
    return None


def jitter_plan() -> list[tuple[str, float]]:
    """ColorJitter's four adjustments with random factors, in random order."""
    b, c, s, h = spec.JITTER
    plan = [
        ("brightness", random.uniform(1 - b, 1 + b)),
        ("contrast", random.uniform(1 - c, 1 + c)),
        ("saturation", random.uniform(1 - s, 1 + s)),
        ("hue", random.uniform(-h, h)),
    ]
    random.shuffle(plan)
    return plan


def inverse_affine(
    center: tuple[float, float],
    angle: float,
    translate: tuple[float, float],
    scale: float,
    shear: tuple[float, float],
) -> list[float]:
    """Output-to-input 2x3 matrix (row-major, 6 values): torchvision's definition of affine."""
    rot = math.radians(angle)
    sx, sy = math.radians(shear[0]), math.radians(shear[1])
    cx, cy = center
    tx, ty = translate
    a = math.cos(rot - sy) / math.cos(sy)
    b = -math.cos(rot - sy) * math.tan(sx) / math.cos(sy) - math.sin(rot)
    c = math.sin(rot - sy) / math.cos(sy)
    d = -math.sin(rot - sy) * math.tan(sx) / math.cos(sy) + math.cos(rot)
    m = [x / scale for x in (d, -b, 0.0, -c, a, 0.0)]
    m[2] += m[0] * (-cx - tx) + m[1] * (-cy - ty) + cx
    m[5] += m[3] * (-cx - tx) + m[4] * (-cy - ty) + cy
    return m


def perspective_points(width: int, height: int) -> tuple[np.ndarray, np.ndarray]:
    """(start, end) corner points as torchvision's RandomPerspective samples them."""
    d = spec.PERSPECTIVE_DISTORTION
    hw, hh = width // 2, height // 2
    dx, dy = int(d * hw) + 1, int(d * hh) + 1
    r = random.randrange
    top_left = [r(0, dx), r(0, dy)]
    top_right = [width - r(0, dx) - 1, r(0, dy)]
    bottom_right = [width - r(0, dx) - 1, height - r(0, dy) - 1]
    bottom_left = [r(0, dx), height - r(0, dy) - 1]
    start = np.array([[0, 0], [width - 1, 0], [width - 1, height - 1], [0, height - 1]])
    end = np.array([top_left, top_right, bottom_right, bottom_left])
    return start.astype(np.float32), end.astype(np.float32)


def perspective_coeffs(start: np.ndarray, end: np.ndarray) -> list[float]:
    """PIL PERSPECTIVE data mapping output points (end) back to input points (start)."""
    rows = []
    for (x, y), (u, v) in zip(end, start, strict=True):
        rows.append([x, y, 1, 0, 0, 0, -u * x, -u * y])
        rows.append([0, 0, 0, x, y, 1, -v * x, -v * y])
    a = np.asarray(rows, dtype=np.float64)
    b = start.astype(np.float64).reshape(8)
    return [float(v) for v in np.linalg.lstsq(a, b, rcond=None)[0]]
