"""What every peer script shares, written out here once so each script stays its system's own
example: the folder walk, the timing loop and the printed JSON. No imgbench import.

Each peer script: ``python lab/peers/NAME.py ROOT --threads N --batch B --rounds R`` prints one
JSON line ``{"images_per_s": [...], "images": N}``: R timed rounds of ``batches`` batches each,
after ``warmup`` batches, one iterator for the whole run (as a training loop holds it).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

# the recipe every row runs (imgbench.augment.spec): area, aspect, jitter, flip, ImageNet stats
SIZE = 224
AREA = (0.08, 1.0)
ASPECT = (3 / 4, 4 / 3)
JITTER = (0.4, 0.4, 0.4, 0.1)
MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)
SUFFIXES = (".jpg", ".jpeg")


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("root")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--batches", type=int, default=4, help="batches per timed round")
    parser.add_argument("--warmup", type=int, default=8, help="untimed batches first")
    return parser.parse_args()


def image_folder(root: str) -> tuple[list[str], list[int]]:
    """ImageFolder's walk: class = first-level folder (sorted), its JPEGs in sorted order."""
    base = Path(root)
    classes = sorted(d.name for d in base.iterdir() if d.is_dir())
    paths, labels = [], []
    for label, name in enumerate(classes):
        for folder, _, files in sorted(os.walk(base / name)):
            for file in sorted(files):
                if file.lower().endswith(SUFFIXES):
                    paths.append(str(Path(folder) / file))
                    labels.append(label)
    return paths, labels


def time_batches(
    batches: Iterator[Any], args: argparse.Namespace, size: Callable[[Any], int]
) -> None:
    """Warm up, then time ``args.rounds`` rounds of ``args.batches`` batches; print the JSON."""
    for _ in range(args.warmup):
        next(batches)
    rates = []
    for _ in range(args.rounds):
        start = time.perf_counter()
        images = sum(size(next(batches)) for _ in range(args.batches))
        rates.append(images / (time.perf_counter() - start))
    print(json.dumps({"images_per_s": rates, "images": images}), flush=True)
    # the figure is out; leave without finalising the loader's threads (a pool still decoding
    # at interpreter exit can abort the process, status 134, which would read as a failure),
    # but end its worker processes first: they hold the caller's pipe open
    import multiprocessing

    for child in multiprocessing.active_children():
        child.kill()
    os._exit(0)


def opencv_albumentations() -> Callable[[str], Any]:
    """path -> CHW float32 tensor: OpenCV's decode (RGB, orientation ignored) and the recipe in
    albumentations, as imgbench's default pipeline runs it; OpenCV and torch on one thread each
    (the loaders' threads are the parallelism)."""
    import albumentations as A  # noqa: N812 (as its docs write it)
    import cv2
    import numpy as np
    import torch
    from albumentations.pytorch import ToTensorV2

    cv2.setNumThreads(1)
    torch.set_num_threads(1)
    pipeline = A.Compose(
        [
            A.RandomResizedCrop(
                size=(SIZE, SIZE),
                scale=AREA,
                ratio=ASPECT,
                interpolation=cv2.INTER_LINEAR,
                area_for_downscale="image",
            ),
            A.HorizontalFlip(p=0.5),
            A.ColorJitter(*JITTER, p=1),
            A.Normalize(mean=MEAN, std=STD),
            ToTensorV2(),
        ]
    )
    flags = cv2.IMREAD_COLOR_RGB | cv2.IMREAD_IGNORE_ORIENTATION

    def load(path: str) -> Any:
        with open(path, "rb") as handle:
            data = handle.read()
        image = cv2.imdecode(np.frombuffer(data, np.uint8), flags)
        return pipeline(image=image)["image"]

    return load
