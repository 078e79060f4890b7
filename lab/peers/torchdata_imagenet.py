"""torchdata.nodes as its ImageNet benchmark example builds it (pytorch/data
examples/nodes/imagenet_benchmark.py, ``setup``): ``SamplerWrapper(sampler)`` ->
``Batcher(batch_size)`` -> ``ParallelMapper(MapAndCollate(dataset), num_workers=N,
method="thread" | "process")`` -> ``Prefetcher(prefetch_factor=2)`` -> ``Loader``. The dataset
decodes and augments with the recipe imgbench's default pipeline runs (OpenCV +
albumentations); the sampler draws reshuffled epochs without end.

    .venv/bin/python lab/peers/torchdata_imagenet.py ROOT --threads 2 --batch 32 [--method process]
"""

from __future__ import annotations

import sys

import torchdata.nodes as tn
from common import arguments, image_folder, opencv_albumentations, time_batches
from torch.utils.data import RandomSampler, default_collate


class Folder:
    def __init__(self, root: str) -> None:
        self.paths, self.labels = image_folder(root)
        self.load = None

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, i: int):  # type: ignore[no-untyped-def]
        if self.load is None:  # built in the process that runs it
            self.load = opencv_albumentations()
        return self.load(self.paths[i]), self.labels[i]


class MapAndCollate:
    def __init__(self, dataset: Folder) -> None:
        self.dataset = dataset

    def __call__(self, indices):  # type: ignore[no-untyped-def]
        return default_collate([self.dataset[i] for i in indices])


def main() -> None:
    method = "process" if "--method" in sys.argv and sys.argv[-1] == "process" else "thread"
    sys.argv = [a for a in sys.argv if a not in ("--method", "process", "thread")]
    args = arguments()
    dataset = Folder(args.root)
    sampler = RandomSampler(dataset, num_samples=1 << 40)
    node = tn.SamplerWrapper(sampler)
    node = tn.Batcher(node, batch_size=args.batch, drop_last=True)
    node = tn.ParallelMapper(
        node, map_fn=MapAndCollate(dataset), num_workers=args.threads, method=method
    )
    node = tn.Prefetcher(node, prefetch_factor=2)
    loader = tn.Loader(node)
    time_batches(iter(loader), args, lambda b: int(b[0].shape[0]))


if __name__ == "__main__":
    main()
