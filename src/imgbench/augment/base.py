"""The augment stage's protocol: an ``Op`` is one library's ready-to-time call.

Inputs are prepared outside the timing in the form the library works on (``InputKind``); the
op's function forces its output to a contiguous array or tensor inside the timing. ``Op.output``
and ``Op.layout`` say how to read the result back as an HxWxC array for verification.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

InputKind = Literal[
    "hwc-uint8",  # numpy HxWx3 uint8 RGB, as decoded
    "pil",  # PIL.Image in mode RGB
    "chw-uint8-tensor",  # torch uint8 3xHxW, contiguous
    "chw-float-tensor",  # torch float32 3xHxW in [0, 1], contiguous
    "bchw-uint8-tensor",  # a batch of same-size images
    "bchw-float-tensor",
]
OutputKind = Literal["u8", "unit", "norm"]  # 0..255 values, floats in [0, 1], normalised floats
Layout = Literal["hwc", "chw", "bchw"]

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


@dataclass(frozen=True)
class Op:
    """One transform or pipeline of one library, built once, applied to many inputs."""

    fn: Callable[[Any], Any]
    input: InputKind
    output: OutputKind = "u8"
    layout: Layout = "hwc"


def make_input(image: np.ndarray, kind: InputKind) -> Any:
    """One decoded HxWx3 uint8 image in the form ``kind`` (untimed set-up)."""
    if kind == "hwc-uint8":
        return np.ascontiguousarray(image)
    if kind == "pil":
        from PIL import Image

        return Image.fromarray(image, mode="RGB")
    import torch

    tensor = torch.from_numpy(np.ascontiguousarray(image)).permute(2, 0, 1).contiguous()
    if kind == "chw-uint8-tensor":
        return tensor
    if kind == "chw-float-tensor":
        return tensor.float().div_(255.0)
    raise ValueError(f"{kind} is a batch kind: use make_batch")


def make_batch(images: Sequence[np.ndarray], kind: InputKind) -> Any:
    """Same-size images stacked into one BxCxHxW tensor (untimed set-up)."""
    import torch

    single: dict[str, InputKind] = {
        "bchw-uint8-tensor": "chw-uint8-tensor",
        "bchw-float-tensor": "chw-float-tensor",
    }
    if kind not in single:
        raise ValueError(f"{kind} is not a batch kind")
    return torch.stack([make_input(im, single[kind]) for im in images]).contiguous()


def as_hwc(output: Any, op: Op) -> np.ndarray:
    """An op's output as a float64 HxWxC array (BxHxWxC for batches) in the op's value units.

    ``u8`` and ``unit`` outputs come back on the 0..255 scale, so tolerances are in grey levels;
    ``norm`` outputs stay in normalised units.
    """
    is_tensor = hasattr(output, "detach")
    array = (output.detach().cpu().numpy() if is_tensor else np.asarray(output)).astype(np.float64)
    if op.layout == "chw":
        array = array.transpose(1, 2, 0)
    elif op.layout == "bchw":
        array = array.transpose(0, 2, 3, 1)
    if array.ndim == 2:
        array = array[..., None]
    if op.output == "unit":
        array = array * 255.0
    return array


def force_numpy(array: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(array)


def force_pil(image: Any) -> np.ndarray:
    """A PIL result as a contiguous HxWx3 array: what a caller gets to use."""
    return np.asarray(image)


def force_tensor(tensor: Any) -> Any:
    return tensor.contiguous()


def chw_uint8(image: np.ndarray) -> np.ndarray:
    """HxWx3 uint8 to contiguous 3xHxW uint8: what a loader ships when the accelerator normalises."""
    return np.ascontiguousarray(image.transpose(2, 0, 1))


def chw_float(image: np.ndarray) -> np.ndarray:
    """HxWx3 float to contiguous 3xHxW float32: the numpy libraries' 'to CHW float tensor'."""
    return np.ascontiguousarray(image.transpose(2, 0, 1), dtype=np.float32)
