"""Pillow by hand, as people write it: Image methods, ImageOps, ImageEnhance, ImageFilter.

Random parameters follow torchvision's definitions (handmade.py). Pillow has no normalisation:
the float steps are numpy, as in any Pillow-based pipeline. Outputs are forced with
``np.asarray`` (a contiguous HxWx3 uint8 copy) inside the timing.
"""

from __future__ import annotations

import io
import random
from collections.abc import Callable
from typing import Any

import numpy as np
from PIL import Image, ImageEnhance, ImageFilter, ImageOps

from imgbench.augment import handmade, spec, tasks
from imgbench.augment.base import IMAGENET_MEAN, IMAGENET_STD, InputKind, Op, chw_float, chw_uint8

LIBRARY = "pillow"
BILINEAR = Image.Resampling.BILINEAR
_MEAN = np.asarray(IMAGENET_MEAN, dtype=np.float32)
_STD = np.asarray(IMAGENET_STD, dtype=np.float32)


def _op(fn: Callable[[Image.Image], Image.Image]) -> Op:
    def run(image: Image.Image) -> np.ndarray:
        return np.asarray(fn(image))

    return Op(run, "pil", "u8", "hwc")


def hue(image: Image.Image, shift: float) -> Image.Image:
    """Rotate hue in PIL's 8-bit HSV, as torchvision's PIL backend does."""
    h, s, v = image.convert("HSV").split()
    delta = int(shift * 255)
    h = h.point(lambda x: (x + delta) % 256)
    return Image.merge("HSV", (h, s, v)).convert("RGB")


_ADJUST: dict[str, Callable[[Image.Image, float], Image.Image]] = {
    "brightness": lambda im, f: ImageEnhance.Brightness(im).enhance(f),
    "contrast": lambda im, f: ImageEnhance.Contrast(im).enhance(f),
    "saturation": lambda im, f: ImageEnhance.Color(im).enhance(f),
    "hue": hue,
}


def color_jitter(image: Image.Image) -> Image.Image:
    for name, factor in handmade.jitter_plan():
        image = _ADJUST[name](image, factor)
    return image


def random_resized_crop(image: Image.Image) -> Image.Image:
    left, top, w, h = handmade.rrc_box(*image.size)
    return image.resize((spec.SIZE, spec.SIZE), BILINEAR, box=(left, top, left + w, top + h))


def center_crop(image: Image.Image, size: int = spec.SIZE) -> Image.Image:
    left, top = handmade.center_box(*image.size, size)
    return image.crop((left, top, left + size, top + size))


def random_crop(image: Image.Image) -> Image.Image:
    left, top = handmade.random_box(*image.size, spec.SIZE)
    return image.crop((left, top, left + spec.SIZE, top + spec.SIZE))


def affine(image: Image.Image) -> Image.Image:
    w, h = image.size
    matrix = handmade.inverse_affine(
        (w * 0.5, h * 0.5),
        spec.AFFINE_DEG,
        (0.0, 0.0),
        spec.AFFINE_SCALE,
        (spec.AFFINE_SHEAR_DEG, 0.0),
    )
    return image.transform((w, h), Image.Transform.AFFINE, matrix, BILINEAR, fillcolor=0)


def perspective(image: Image.Image) -> Image.Image:
    start, end = handmade.perspective_points(*image.size)
    coeffs = handmade.perspective_coeffs(start, end)
    return image.transform(image.size, Image.Transform.PERSPECTIVE, coeffs, BILINEAR, fillcolor=0)


def erase(array: np.ndarray) -> np.ndarray:
    """Zero one random box of a writable HxWxC array (the numpy part of a Pillow pipeline)."""
    box = handmade.erasing_box(array.shape[1], array.shape[0])
    if box is not None:
        left, top, w, h = box
        array[top : top + h, left : left + w] = 0
    return array


def random_erasing(image: Image.Image) -> Image.Image:
    box = handmade.erasing_box(*image.size)
    if box is None:
        return image.copy()
    left, top, w, h = box
    out = image.copy()
    out.paste((0, 0, 0), (left, top, left + w, top + h))
    return out


def jpeg(image: Image.Image) -> Image.Image:
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", quality=spec.JPEG_QUALITY)
    buffer.seek(0)
    out = Image.open(buffer)
    out.load()
    return out


def normalize(image: Image.Image) -> np.ndarray:
    array = np.asarray(image, dtype=np.float32)
    array *= np.float32(1 / 255)
    array -= _MEAN
    array /= _STD
    return array


def _to_tensor(image: Image.Image) -> np.ndarray:
    return chw_float(np.asarray(image, dtype=np.float32) * np.float32(1 / 255))


TRANSFORMS: dict[str, Callable[[], Op]] = {
    "hflip": lambda: _op(lambda im: im.transpose(Image.Transpose.FLIP_LEFT_RIGHT)),
    "vflip": lambda: _op(lambda im: im.transpose(Image.Transpose.FLIP_TOP_BOTTOM)),
    "rotate90": lambda: _op(lambda im: im.transpose(Image.Transpose.ROTATE_90)),
    "rotate": lambda: _op(lambda im: im.rotate(spec.ROTATE_DEG, BILINEAR, fillcolor=0)),
    "affine": lambda: _op(affine),
    "perspective": lambda: _op(perspective),
    "resize": lambda: _op(lambda im: im.resize((spec.SIZE, spec.SIZE), BILINEAR)),
    "random_resized_crop": lambda: _op(random_resized_crop),
    "center_crop": lambda: _op(center_crop),
    "random_crop": lambda: _op(random_crop),
    "pad": lambda: _op(lambda im: ImageOps.expand(im, border=spec.PAD, fill=0)),
    "brightness": lambda: _op(lambda im: _ADJUST["brightness"](im, spec.BRIGHTNESS)),
    "contrast": lambda: _op(lambda im: _ADJUST["contrast"](im, spec.CONTRAST)),
    "saturation": lambda: _op(lambda im: _ADJUST["saturation"](im, spec.SATURATION)),
    "hue": lambda: _op(lambda im: hue(im, spec.HUE)),
    "color_jitter": lambda: _op(color_jitter),
    "grayscale": lambda: _op(lambda im: im.convert("L").convert("RGB")),
    "gaussian_blur": lambda: _op(lambda im: im.filter(ImageFilter.GaussianBlur(spec.BLUR_SIGMA))),
    "median_blur": lambda: _op(lambda im: im.filter(ImageFilter.MedianFilter(spec.MEDIAN_KERNEL))),
    "sharpen": lambda: _op(lambda im: ImageEnhance.Sharpness(im).enhance(spec.SHARPNESS)),
    "equalize": lambda: _op(ImageOps.equalize),
    "posterize": lambda: _op(lambda im: ImageOps.posterize(im, spec.POSTERIZE_BITS)),
    "solarize": lambda: _op(lambda im: ImageOps.solarize(im, spec.SOLARIZE_THRESHOLD)),
    "invert": lambda: _op(ImageOps.invert),
    "normalize": lambda: Op(normalize, "pil", "norm", "hwc"),
    "to_tensor": lambda: Op(_to_tensor, "pil", "unit", "chw"),
    "random_erasing": lambda: _op(random_erasing),
    "jpeg": lambda: _op(jpeg),
}


def _train(image: Image.Image) -> Image.Image:
    image = random_resized_crop(image)
    if random.random() < spec.FLIP_P:
        image = image.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
    return color_jitter(image)


def _train_pipeline(image: Image.Image) -> np.ndarray:
    return chw_float(normalize(_train(image)))


def _train_uint8_pipeline(image: Image.Image) -> np.ndarray:
    return chw_uint8(np.asarray(_train(image)))


def _light_pipeline(image: Image.Image) -> np.ndarray:
    image = image.resize(handmade.short_side_size(*image.size, spec.RESIZE_SHORT), BILINEAR)
    return chw_float(normalize(center_crop(image)))


def _heavy_pipeline(image: Image.Image) -> np.ndarray:
    image = _train(image)
    angle = random.uniform(-spec.HEAVY_ROTATE_DEG, spec.HEAVY_ROTATE_DEG)
    image = image.rotate(angle, BILINEAR, fillcolor=0)
    image = image.filter(ImageFilter.GaussianBlur(random.uniform(*spec.HEAVY_BLUR_SIGMA)))
    array = normalize(image)
    if random.random() < spec.HEAVY_ERASE_P:
        erase(array)
    return chw_float(array)


PIPELINES: dict[str, Callable[[], Op]] = {
    "train-classification": lambda: Op(_train_pipeline, "pil", "norm", "chw"),
    "train-uint8": lambda: Op(_train_uint8_pipeline, "pil", "u8", "chw"),
    "light": lambda: Op(_light_pipeline, "pil", "norm", "chw"),
    "heavy": lambda: Op(_heavy_pipeline, "pil", "norm", "chw"),
}


def transforms(input_kind: InputKind) -> dict[str, Callable[[], Op]]:
    return TRANSFORMS


def pipelines(input_kind: InputKind) -> dict[str, Callable[[], Op]]:
    return PIPELINES


# tasks beyond classification (augment/tasks.py): seed 000's crop-ocr, as its Keras Sequence wrote it


def _crop_ocr(image: Image.Image) -> np.ndarray:
    """``Image.crop`` pads outside the image with zeros; ``resize`` uses Pillow's default filter
    (BICUBIC since Pillow 7; NEAREST when the post was written)."""
    out = np.asarray(image.crop(tasks.OCR_BOX).resize(tasks.OCR_SIZE))[..., :3]
    return out.astype(np.float32) / np.float32(255.0)


def _seg_geometry(
    image: np.ndarray, mask: np.ndarray, g: tasks.Geometry
) -> tuple[Image.Image, np.ndarray]:
    """The same window and flip on both: Pillow's bilinear (antialiased) for the image; for the
    mask torch's nearest (source index floor(x * crop / 224) in float32), by NumPy indexing,
    since Pillow's NEAREST samples pixel centres and would pick other rows than the reference."""
    size = tasks.SEG_SIZE
    box = (g.left, g.top, g.left + g.width, g.top + g.height)
    out = Image.fromarray(image).resize((size, size), BILINEAR, box=box)
    steps = np.arange(size, dtype=np.float32)
    rows = np.minimum((steps * np.float32(g.height / size)).astype(np.intp), g.height - 1)
    cols = np.minimum((steps * np.float32(g.width / size)).astype(np.intp), g.width - 1)
    out_mask = mask[g.top + rows[:, None], g.left + cols[None, :]]
    if g.flip:
        out, out_mask = out.transpose(Image.Transpose.FLIP_LEFT_RIGHT), out_mask[:, ::-1]
    return out, np.ascontiguousarray(out_mask)


def _seg_out(image: Image.Image, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return chw_float(normalize(image)), mask.astype(np.int64), tasks.onehot_np(mask)


def _segmentation(sample: tuple[np.ndarray, np.ndarray]) -> Any:
    image, mask = sample
    out, out_mask = _seg_geometry(image, mask, tasks.draw_geometry(image.shape[1], image.shape[0]))
    return _seg_out(color_jitter(out), out_mask)


def task_recipes(input_kind: InputKind) -> dict[str, Callable[[], tasks.TaskOp]]:
    return {
        "crop-ocr": lambda: tasks.TaskOp(_crop_ocr, "pil"),
        # by hand, as a Keras DataGenerator does it where only Pillow is (the tensorflow env)
        "segmentation": lambda: tasks.TaskOp(
            _segmentation, "numpy", lambda s, g: _seg_out(*_seg_geometry(s[0], s[1], g))
        ),
    }
