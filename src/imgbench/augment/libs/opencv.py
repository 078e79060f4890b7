"""OpenCV by hand: the baseline people write with cv2 calls on HxWx3 uint8 RGB arrays.

Random parameters follow torchvision's definitions (handmade.py). Downscales use INTER_AREA,
OpenCV's antialiased choice: INTER_LINEAR skips antialiasing on downscale and would do less
work than the other libraries (spec.py). Float steps (normalise) are numpy.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import cv2
import numpy as np

from imgbench.augment import handmade, spec, tasks
from imgbench.augment.base import IMAGENET_MEAN, IMAGENET_STD, InputKind, Op, chw_float, chw_uint8

LIBRARY = "opencv"
_MEAN = np.asarray(IMAGENET_MEAN, dtype=np.float32)
_STD = np.asarray(IMAGENET_STD, dtype=np.float32)
_SHARPEN_KERNEL = np.array([[1, 1, 1], [1, 5, 1], [1, 1, 1]], dtype=np.float32) / 13
_POSTERIZE_LUT = (np.arange(256) & (0xFF << (8 - spec.POSTERIZE_BITS) & 0xFF)).astype(np.uint8)
_SOLARIZE_LUT = np.array(
    [v if v < spec.SOLARIZE_THRESHOLD else 255 - v for v in range(256)], dtype=np.uint8
)


def _op(fn: Callable[[np.ndarray], np.ndarray]) -> Op:
    def run(image: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(fn(image))

    return Op(run, "hwc-uint8", "u8", "hwc")


def resize(image: np.ndarray, width: int, height: int) -> np.ndarray:
    shrink = width < image.shape[1] or height < image.shape[0]
    return cv2.resize(
        image, (width, height), interpolation=cv2.INTER_AREA if shrink else cv2.INTER_LINEAR
    )


def _warp_inverse(image: np.ndarray, matrix: list[float]) -> np.ndarray:
    h, w = image.shape[:2]
    return cv2.warpAffine(
        image,
        np.asarray(matrix, dtype=np.float64).reshape(2, 3),
        (w, h),
        flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP,
        borderMode=cv2.BORDER_CONSTANT,
        borderValue=0,
    )


def rotate(image: np.ndarray, angle: float) -> np.ndarray:
    h, w = image.shape[:2]
    matrix = cv2.getRotationMatrix2D(((w - 1) / 2, (h - 1) / 2), angle, 1.0)
    return cv2.warpAffine(image, matrix, (w, h), flags=cv2.INTER_LINEAR, borderValue=0)


def affine(image: np.ndarray) -> np.ndarray:
    h, w = image.shape[:2]
    matrix = handmade.inverse_affine(
        ((w - 1) / 2, (h - 1) / 2),
        spec.AFFINE_DEG,
        (0.0, 0.0),
        spec.AFFINE_SCALE,
        (spec.AFFINE_SHEAR_DEG, 0.0),
    )
    return _warp_inverse(image, matrix)


def perspective(image: np.ndarray) -> np.ndarray:
    h, w = image.shape[:2]
    start, end = handmade.perspective_points(w, h)
    matrix = cv2.getPerspectiveTransform(start, end)
    return cv2.warpPerspective(image, matrix, (w, h), flags=cv2.INTER_LINEAR, borderValue=0)


def _gray3(image: np.ndarray) -> np.ndarray:
    return cv2.cvtColor(cv2.cvtColor(image, cv2.COLOR_RGB2GRAY), cv2.COLOR_GRAY2RGB)


def brightness(image: np.ndarray, factor: float) -> np.ndarray:
    return cv2.convertScaleAbs(image, alpha=factor, beta=0)


def contrast(image: np.ndarray, factor: float) -> np.ndarray:
    mean = float(cv2.cvtColor(image, cv2.COLOR_RGB2GRAY).mean())
    return cv2.addWeighted(image, factor, image, 0, (1 - factor) * mean)


def saturation(image: np.ndarray, factor: float) -> np.ndarray:
    return cv2.addWeighted(image, factor, _gray3(image), 1 - factor, 0)


def hue(image: np.ndarray, shift: float) -> np.ndarray:
    hsv = cv2.cvtColor(image, cv2.COLOR_RGB2HSV_FULL)
    hsv[..., 0] += np.uint8(int(shift * 255) % 256)  # uint8 arithmetic wraps around the circle
    return cv2.cvtColor(hsv, cv2.COLOR_HSV2RGB_FULL)


_ADJUST: dict[str, Callable[[np.ndarray, float], np.ndarray]] = {
    "brightness": brightness,
    "contrast": contrast,
    "saturation": saturation,
    "hue": hue,
}


def color_jitter(image: np.ndarray) -> np.ndarray:
    for name, factor in handmade.jitter_plan():
        image = _ADJUST[name](image, factor)
    return image


def sharpen(image: np.ndarray, factor: float = spec.SHARPNESS) -> np.ndarray:
    """PIL's ImageEnhance.Sharpness: blend with a 3x3 smoothed copy; border pixels unchanged."""
    smooth = cv2.filter2D(image, -1, _SHARPEN_KERNEL)
    smooth[0, :], smooth[-1, :], smooth[:, 0], smooth[:, -1] = (
        image[0, :],
        image[-1, :],
        image[:, 0],
        image[:, -1],
    )
    return cv2.addWeighted(image, factor, smooth, 1 - factor, 0)


def equalize(image: np.ndarray) -> np.ndarray:
    return cv2.merge([cv2.equalizeHist(channel) for channel in cv2.split(image)])


def random_resized_crop(image: np.ndarray) -> np.ndarray:
    left, top, w, h = handmade.rrc_box(image.shape[1], image.shape[0])
    return resize(image[top : top + h, left : left + w], spec.SIZE, spec.SIZE)


def center_crop(image: np.ndarray, size: int = spec.SIZE) -> np.ndarray:
    left, top = handmade.center_box(image.shape[1], image.shape[0], size)
    return image[top : top + size, left : left + size]


def random_crop(image: np.ndarray) -> np.ndarray:
    left, top = handmade.random_box(image.shape[1], image.shape[0], spec.SIZE)
    return image[top : top + spec.SIZE, left : left + spec.SIZE]


def erase(image: np.ndarray) -> np.ndarray:
    """Zero one random box of a writable array in place."""
    box = handmade.erasing_box(image.shape[1], image.shape[0])
    if box is not None:
        left, top, w, h = box
        image[top : top + h, left : left + w] = 0
    return image


def elastic(image: np.ndarray) -> np.ndarray:
    """torchvision's ElasticTransform by hand: smoothed random displacements, then remap."""
    h, w = image.shape[:2]
    ksize = int(8 * spec.ELASTIC_SIGMA + 1) | 1
    dx = cv2.GaussianBlur(
        np.random.uniform(-1, 1, (h, w)).astype(np.float32), (ksize, ksize), spec.ELASTIC_SIGMA
    )
    dy = cv2.GaussianBlur(
        np.random.uniform(-1, 1, (h, w)).astype(np.float32), (ksize, ksize), spec.ELASTIC_SIGMA
    )
    grid_x, grid_y = np.meshgrid(np.arange(w, dtype=np.float32), np.arange(h, dtype=np.float32))
    map_x = grid_x + dx * np.float32(spec.ELASTIC_ALPHA)
    map_y = grid_y + dy * np.float32(spec.ELASTIC_ALPHA)
    return cv2.remap(
        image, map_x, map_y, cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT, borderValue=0
    )


def jpeg(image: np.ndarray) -> np.ndarray:
    ok, data = cv2.imencode(
        ".jpg",
        cv2.cvtColor(image, cv2.COLOR_RGB2BGR),
        [cv2.IMWRITE_JPEG_QUALITY, spec.JPEG_QUALITY],
    )
    if not ok:
        raise RuntimeError("cv2.imencode failed")
    decoded = cv2.imdecode(data, cv2.IMREAD_COLOR_RGB)
    if decoded is None:  # cv2 returns None for undecodable data
        raise RuntimeError("cv2.imdecode failed")
    return decoded


def normalize(image: np.ndarray) -> np.ndarray:
    array = image.astype(np.float32)
    array *= np.float32(1 / 255)
    array -= _MEAN
    array /= _STD
    return array


def _to_tensor(image: np.ndarray) -> np.ndarray:
    return chw_float(image.astype(np.float32) * np.float32(1 / 255))


TRANSFORMS: dict[str, Callable[[], Op]] = {
    "hflip": lambda: _op(lambda im: cv2.flip(im, 1)),
    "vflip": lambda: _op(lambda im: cv2.flip(im, 0)),
    "rotate90": lambda: _op(lambda im: cv2.rotate(im, cv2.ROTATE_90_COUNTERCLOCKWISE)),
    "rotate": lambda: _op(lambda im: rotate(im, spec.ROTATE_DEG)),
    "affine": lambda: _op(affine),
    "perspective": lambda: _op(perspective),
    "resize": lambda: _op(lambda im: resize(im, spec.SIZE, spec.SIZE)),
    "random_resized_crop": lambda: _op(random_resized_crop),
    "center_crop": lambda: _op(center_crop),
    "random_crop": lambda: _op(random_crop),
    "pad": lambda: _op(
        lambda im: cv2.copyMakeBorder(im, *(spec.PAD,) * 4, cv2.BORDER_CONSTANT, value=(0, 0, 0))
    ),
    "brightness": lambda: _op(lambda im: brightness(im, spec.BRIGHTNESS)),
    "contrast": lambda: _op(lambda im: contrast(im, spec.CONTRAST)),
    "saturation": lambda: _op(lambda im: saturation(im, spec.SATURATION)),
    "hue": lambda: _op(lambda im: hue(im, spec.HUE)),
    "color_jitter": lambda: _op(color_jitter),
    "grayscale": lambda: _op(_gray3),
    "gaussian_blur": lambda: _op(
        lambda im: cv2.GaussianBlur(im, (spec.BLUR_KERNEL, spec.BLUR_KERNEL), spec.BLUR_SIGMA)
    ),
    "median_blur": lambda: _op(lambda im: cv2.medianBlur(im, spec.MEDIAN_KERNEL)),
    "sharpen": lambda: _op(sharpen),
    "equalize": lambda: _op(equalize),
    "posterize": lambda: _op(lambda im: cv2.LUT(im, _POSTERIZE_LUT)),
    "solarize": lambda: _op(lambda im: cv2.LUT(im, _SOLARIZE_LUT)),
    "invert": lambda: _op(cv2.bitwise_not),
    "normalize": lambda: Op(normalize, "hwc-uint8", "norm", "hwc"),
    "to_tensor": lambda: Op(_to_tensor, "hwc-uint8", "unit", "chw"),
    "random_erasing": lambda: _op(lambda im: erase(im.copy())),
    "elastic": lambda: _op(elastic),
    "jpeg": lambda: _op(jpeg),
}


def _train(image: np.ndarray) -> np.ndarray:
    image = random_resized_crop(image)
    if random.random() < spec.FLIP_P:
        image = cv2.flip(image, 1)
    return color_jitter(image)


def _train_pipeline(image: np.ndarray) -> np.ndarray:
    return chw_float(normalize(_train(image)))


def _train_uint8_pipeline(image: np.ndarray) -> np.ndarray:
    return chw_uint8(_train(image))


def _light_pipeline(image: np.ndarray) -> np.ndarray:
    image = resize(
        image, *handmade.short_side_size(image.shape[1], image.shape[0], spec.RESIZE_SHORT)
    )
    return chw_float(normalize(center_crop(image)))


def _heavy_pipeline(image: np.ndarray) -> np.ndarray:
    image = _train(image)
    image = rotate(image, random.uniform(-spec.HEAVY_ROTATE_DEG, spec.HEAVY_ROTATE_DEG))
    image = cv2.GaussianBlur(
        image, (spec.BLUR_KERNEL, spec.BLUR_KERNEL), random.uniform(*spec.HEAVY_BLUR_SIGMA)
    )
    array = normalize(image)
    if random.random() < spec.HEAVY_ERASE_P:
        erase(array)
    return chw_float(array)


PIPELINES: dict[str, Callable[[], Op]] = {
    "train-classification": lambda: Op(_train_pipeline, "hwc-uint8", "norm", "chw"),
    "train-uint8": lambda: Op(_train_uint8_pipeline, "hwc-uint8", "u8", "chw"),
    "light": lambda: Op(_light_pipeline, "hwc-uint8", "norm", "chw"),
    "heavy": lambda: Op(_heavy_pipeline, "hwc-uint8", "norm", "chw"),
}


def transforms(input_kind: InputKind) -> dict[str, Callable[[], Op]]:
    return TRANSFORMS


def pipelines(input_kind: InputKind) -> dict[str, Callable[[], Op]]:
    return PIPELINES


# tasks beyond classification (augment/tasks.py): written by hand, as the seed posts do


def _seg_geometry(
    image: np.ndarray, mask: np.ndarray, g: tasks.Geometry
) -> tuple[np.ndarray, np.ndarray]:
    """The same window and flip on both: area/linear for the image, nearest for the mask."""
    size = tasks.SEG_SIZE
    window = (slice(g.top, g.top + g.height), slice(g.left, g.left + g.width))
    out = resize(image[window], size, size)
    out_mask = cv2.resize(mask[window], (size, size), interpolation=cv2.INTER_NEAREST)
    if g.flip:
        out, out_mask = cv2.flip(out, 1), cv2.flip(out_mask, 1)
    return out, out_mask


def _seg_out(image: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return chw_float(normalize(image)), mask.astype(np.int64), tasks.onehot_np(mask)


def _segmentation(sample: tuple[np.ndarray, np.ndarray]) -> Any:
    image, mask = sample
    image, mask = _seg_geometry(image, mask, tasks.draw_geometry(image.shape[1], image.shape[0]))
    return _seg_out(color_jitter(image), mask)


def _crop_ocr(sample: tuple[np.ndarray, Any]) -> np.ndarray:
    window = tasks.ocr_window(sample[0])
    out = cv2.resize(window, tasks.OCR_SIZE, interpolation=cv2.INTER_CUBIC)[..., :3]
    return out.astype(np.float32) / np.float32(255.0)


def _onehot(sample: tuple[int, list[np.ndarray]]) -> list[np.ndarray]:
    classes, heads = sample
    return [tasks.to_categorical(labels, classes) for labels in heads]


def task_recipes(input_kind: InputKind) -> dict[str, Callable[[], tasks.TaskOp]]:
    return {
        "segmentation": lambda: tasks.TaskOp(
            _segmentation, "numpy", lambda s, g: _seg_out(*_seg_geometry(s[0], s[1], g))
        ),
        "crop-ocr": lambda: tasks.TaskOp(_crop_ocr, "numpy"),
        "onehot": lambda: tasks.TaskOp(_onehot, "numpy"),
    }
