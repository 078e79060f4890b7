"""SPDL as its ImageNet example builds it (facebookresearch/spdl
examples/imagenet_classification.py): the file list as the source, ``aggregate(batch_size)``
first, then one task per batch on the pipeline's threads (``pipe(batch_fn, concurrency=N)``),
a sink with a small buffer, ``build(num_threads=N)``. The task decodes and augments the
batch's images with the recipe imgbench's default pipeline runs (OpenCV + albumentations) and
stacks them: the example's shape with the matrix's work.

    .venv/bin/python lab/peers/spdl_imagenet.py ROOT --threads 2 --batch 32
"""

from __future__ import annotations

import random

import torch
from common import arguments, image_folder, opencv_albumentations, time_batches
from spdl.pipeline import PipelineBuilder


def shuffled(paths: list[str], labels: list[int]):  # type: ignore[no-untyped-def]
    """Reshuffled epochs without end."""
    order = list(range(len(paths)))
    rng = random.Random(0)
    while True:
        rng.shuffle(order)
        for i in order:
            yield paths[i], labels[i]


def main() -> None:
    args = arguments()
    paths, labels = image_folder(args.root)
    load = opencv_albumentations()

    def batch_fn(items):  # type: ignore[no-untyped-def]
        images = torch.stack([load(path) for path, _ in items])
        return images, torch.tensor([label for _, label in items])

    pipeline = (
        PipelineBuilder()
        .add_source(shuffled(paths, labels))
        .aggregate(args.batch, drop_last=True)
        .pipe(batch_fn, concurrency=args.threads)
        .add_sink(2)
        .build(num_threads=args.threads)
    )
    with pipeline.auto_stop():
        time_batches(iter(pipeline), args, lambda b: int(b[0].shape[0]))


if __name__ == "__main__":
    main()
