"""Pipelines whose bound is known by construction, in Pillow, OpenCV and torchvision alike: what
``imgbench profile`` must name as the largest share.

- ``decode``: the encoded files are read once up front; each sample only decodes its bytes.
- ``augment``: the images are decoded once up front; each sample only blurs, rotates and changes
  the colours of its decoded image (an augmentation-bound pipeline).
- ``collate``: each sample is a big float32 array made once up front (a view, no work per
  sample); the DataLoader's collate copies them into a batch in shared memory and sends it to
  the main process (run with workers > 0).

Run them with OpenCV and torch on one thread (``one_thread``): their pools' threads carry no
Python frames, and on a busy 2-core host torch's spinning pool made a 320x240 blur 190 ms instead
of 30 ms and an 8-image ``torch.stack`` the largest share of a decode-bound pipeline.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

LIBRARIES = ("pillow", "opencv", "torchvision")
BOUNDS = ("decode", "augment", "collate")
BIG = 640  # side of the collate pipeline's float32 arrays: 4.9 MB a sample


@contextlib.contextmanager
def one_thread() -> Iterator[None]:
    """OpenCV and torch on one thread, as they were after."""
    import cv2
    import torch

    before = cv2.getNumThreads(), torch.get_num_threads()
    cv2.setNumThreads(1)
    torch.set_num_threads(1)
    try:
        yield
    finally:
        cv2.setNumThreads(before[0])
        torch.set_num_threads(before[1])


class Bound:
    """``library`` in LIBRARIES, ``bound`` in BOUNDS, over the first ``images`` JPEGs of ``root``."""

    def __init__(self, root: str, library: str, bound: str, images: int = 8) -> None:
        self.library, self.bound = library, bound
        files = sorted(Path(root).rglob("*.jpg"))[:images]
        self.encoded = [p.read_bytes() for p in files]
        if library == "opencv":
            self.encoded_arrays = [np.frombuffer(b, np.uint8) for b in self.encoded]
        elif library == "torchvision":
            import torch
            from torchvision.transforms import v2

            self.encoded_tensors = [
                torch.frombuffer(bytearray(b), dtype=torch.uint8) for b in self.encoded
            ]
            self.transform = v2.Compose(
                [
                    v2.GaussianBlur(9, sigma=3.0),
                    v2.RandomRotation(20),
                    v2.ColorJitter(0.4, 0.4, 0.4),
                ]
            )
        if bound == "augment":
            self.images = [self._decode(i) for i in range(len(self.encoded))]
        elif bound == "collate":
            self.big = [self._big(self._decode(i)) for i in range(len(self.encoded))]

    def __len__(self) -> int:
        return 64 * len(self.encoded)

    def __getitem__(self, index: int) -> Any:
        i = index % len(self.encoded)
        if self.bound == "decode":
            return self._as_array(self._decode(i))
        if self.bound == "augment":
            return self._augment(self.images[i])
        return self.big[i]  # collate: nothing to do here, the batch is the work

    def _decode(self, i: int) -> Any:
        if self.library == "pillow":
            from PIL import Image

            image = Image.open(io.BytesIO(self.encoded[i]))
            return image.convert("RGB")
        if self.library == "opencv":
            import cv2

            return cv2.imdecode(self.encoded_arrays[i], cv2.IMREAD_COLOR)
        from torchvision.io import decode_jpeg

        return decode_jpeg(self.encoded_tensors[i])

    def _augment(self, image: Any) -> Any:
        if self.library == "pillow":
            from PIL import ImageEnhance, ImageFilter, ImageOps

            image = image.filter(ImageFilter.GaussianBlur(4))
            image = image.rotate(17, resample=3)  # bicubic
            image = ImageEnhance.Contrast(image).enhance(1.3)
            image = ImageOps.autocontrast(image)
            return np.asarray(image)
        if self.library == "opencv":
            import cv2

            height, width = image.shape[:2]
            matrix = cv2.getRotationMatrix2D((width / 2, height / 2), 17, 1.0)
            image = cv2.GaussianBlur(image, (15, 15), 4)
            image = cv2.warpAffine(image, matrix, (width, height), flags=cv2.INTER_CUBIC)
            image = cv2.cvtColor(image, cv2.COLOR_BGR2HSV)
            image = cv2.GaussianBlur(image, (9, 9), 2)
            return cv2.flip(image, 1)
        return self.transform(image)

    def _as_array(self, image: Any) -> Any:
        return np.asarray(image) if self.library == "pillow" else image

    def _big(self, image: Any) -> Any:
        """A BIG x BIG float32 copy of a decoded image, made once."""
        if self.library == "torchvision":
            import torch

            scaled = torch.nn.functional.interpolate(image[None].float(), size=(BIG, BIG))
            return scaled[0].contiguous()
        pixels = np.asarray(image, dtype=np.float32)
        rows = np.linspace(0, pixels.shape[0] - 1, BIG).astype(int)
        cols = np.linspace(0, pixels.shape[1] - 1, BIG).astype(int)
        return np.ascontiguousarray(pixels[rows][:, cols].transpose(2, 0, 1))
