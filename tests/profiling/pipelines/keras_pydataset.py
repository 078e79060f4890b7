"""A Keras ``PyDataset`` as a Keras user writes one (TensorFlow environment): each batch reads
its JPEGs with Pillow, resizes them to 96x96, divides by 255 and one-hot encodes the class
(the folder name) with ``keras.utils.to_categorical``.

``bad`` puts this source file first among the images: ``Image.open`` raises on it.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import keras
import numpy as np
from PIL import Image


class FolderBatches(keras.utils.PyDataset):
    def __init__(self, root: str, batch_size: int = 4, bad: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.paths = sorted(Path(root).rglob("*.jpg"))
        if bad:
            self.paths.insert(0, Path(__file__))
        self.classes = sorted({p.parent.name for p in self.paths})
        self.batch_size = batch_size

    def __len__(self) -> int:
        return math.ceil(len(self.paths) / self.batch_size)

    def __getitem__(self, index: int) -> tuple[np.ndarray, np.ndarray]:
        paths = self.paths[index * self.batch_size : (index + 1) * self.batch_size]
        images = []
        for path in paths:
            image = Image.open(path).convert("RGB")
            image = image.resize((96, 96), Image.Resampling.BILINEAR)
            images.append(np.asarray(image, dtype=np.float32) / 255.0)
        labels = [
            self.classes.index(p.parent.name) if p.parent.name in self.classes else 0 for p in paths
        ]
        one_hot = keras.utils.to_categorical(labels, num_classes=len(self.classes))
        return np.stack(images), one_hot


def make_dataset(
    root: str,
    batch_size: int = 4,
    workers: int = 1,
    multiprocessing: bool = False,
    bad: bool = False,
) -> FolderBatches:
    """The dataset with the user's own ``workers``/``use_multiprocessing``."""
    return FolderBatches(
        root, batch_size, bad, workers=workers, use_multiprocessing=multiprocessing
    )
