"""Example pipeline 2: OpenCV decode + albumentations, with a deliberately Python-list index
(the copy-on-access pattern: forked workers that read it copy its pages).

``decode_repeats`` decodes each image that many times (a decoder made N times slower);
``heavy_augment`` adds costly blurs and colour changes (a heavy augmentation)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

os.environ.setdefault("NO_ALBUMENTATIONS_UPDATE", "1")


class Cv2Dataset:
    def __init__(
        self,
        root: str,
        size: int = 96,
        padding: int = 0,
        decode_repeats: int = 1,
        heavy_augment: bool = False,
    ) -> None:
        import albumentations as albu

        self.decode_repeats = decode_repeats
        files = sorted(str(p) for p in Path(root).rglob("*.jpg"))
        # a Python list of paths, padded to a realistic index size when asked
        self.paths: list[str] = files + [files[i % len(files)] for i in range(padding)]
        steps: list[Any] = [albu.RandomResizedCrop(size=(size, size)), albu.HorizontalFlip()]
        if heavy_augment:  # on the full-size image, before the crop: what makes augmentation costly
            steps = [albu.GaussianBlur(blur_limit=(15, 15), p=1.0)] * 4 + steps
            steps += [albu.ColorJitter(p=1.0)] * 2
        self.transform = albu.Compose([*steps, albu.ColorJitter()])

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, index: int) -> tuple[Any, int]:
        import cv2

        for _ in range(self.decode_repeats - 1):
            cv2.imread(self.paths[index], cv2.IMREAD_COLOR_RGB)
        image = cv2.imread(self.paths[index], cv2.IMREAD_COLOR_RGB)
        out = self.transform(image=image)["image"]
        return np.ascontiguousarray(out.transpose(2, 0, 1)), index % 2


def make_loader(root: str, batch_size: int = 8, workers: int = 1, padding: int = 0) -> Any:
    from torch.utils.data import DataLoader

    return DataLoader(
        Cv2Dataset(root, padding=padding),  # type: ignore[arg-type]
        batch_size=batch_size,
        shuffle=True,
        num_workers=workers,
    )
