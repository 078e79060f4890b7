"""An ``IterableDataset`` that shards the file list per worker: worker k of n streams the
samples k, k+n, k+2n, ... of each reshuffled pass, in a DataLoader with ``workers`` processes.

This is how streaming formats (tar shards, record files) are read: no sampler in the main
process, no index sent to the workers, each worker walks its own part. Batches are collated
inside the workers, as with the map-style DataLoader.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
from torch.utils.data import IterableDataset, get_worker_info

from imgbench.loaders.libs.torch_dataloader import TorchLoader
from imgbench.loaders.pipeline import SamplePipeline


class ShardedStream(IterableDataset):
    def __init__(self, pipeline: SamplePipeline, seed: int = 0) -> None:
        self.pipeline = pipeline
        self.seed = seed
        self.config = pipeline.config  # read by collate_for

    def __iter__(self) -> Iterator[Any]:
        info = get_worker_info()
        worker, workers = (info.id, info.num_workers) if info is not None else (0, 1)
        rng = np.random.default_rng(self.seed + 1000 * worker)
        shard = np.arange(worker, len(self.pipeline), workers)
        if shard.size == 0:
            return
        while True:  # endless: one reshuffled pass of this worker's shard after another
            for index in rng.permutation(shard):
                yield self.pipeline[int(index)]


class ShardedLoader(TorchLoader):
    """The DataLoader loader with the stream instead of a map-style dataset and a sampler."""

    def __init__(self, pipeline: SamplePipeline, params: Mapping[str, Any]) -> None:
        super().__init__(pipeline, params)
        from torch.utils.data import DataLoader

        old = self.loader
        kwargs: dict[str, Any] = {}
        if old.num_workers > 0:
            kwargs.update(
                prefetch_factor=old.prefetch_factor,
                persistent_workers=old.persistent_workers,
                multiprocessing_context=old.multiprocessing_context,
                timeout=old.timeout,
                worker_init_fn=old.worker_init_fn,
            )
        self.loader = DataLoader(
            ShardedStream(pipeline),
            batch_size=old.batch_size,
            collate_fn=old.collate_fn,
            num_workers=old.num_workers,
            pin_memory=old.pin_memory,
            drop_last=True,
            **kwargs,
        )


def build(pipeline: SamplePipeline, params: Mapping[str, Any]) -> ShardedLoader:
    return ShardedLoader(pipeline, params)
