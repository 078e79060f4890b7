"""PyTorch ``DataLoader``: worker processes (fork, spawn or forkserver) running the pipeline.

The sampler draws reshuffled epochs without end (``RandomSampler`` with ``num_samples`` far past
the dataset), so one iterator serves the whole measurement and the harness sees the steady state.
``epoch_start_s`` then measures what a new epoch costs: with ``persistent_workers`` the same
workers refill their queues; without, a new set of workers starts. ``in_order=False`` (torch >=
2.6, a case parameter) hands batches over as workers finish them, so one slow sample does not
hold back the batches behind it.

Each worker pins OpenCV to one thread (torch already pins itself to one in workers): parallelism
comes from the workers, as in the usual recipe, not from oversubscribed library pools.
"""

from __future__ import annotations

import contextlib
import functools
import shutil
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from imgbench.loaders.base import BATCH_TIMEOUT_S, Batch, clock, reap
from imgbench.loaders.documented import Documented
from imgbench.loaders.pipeline import SamplePipeline, collate_for
from imgbench.unix_sockets import check_tensor_handover, use_temp_dir, workers_temp_dir

if TYPE_CHECKING:
    from imgbench.loaders.plan import LoaderPlan
    from imgbench.measure.case import Case

ENDLESS = 1 << 40  # samples the sampler may draw: far more than any run takes
# PyTorch's ImageNet training example: ImageFolder (Pillow's open + convert("RGB")) with
# torchvision's transforms, DataLoader(shuffle, num_workers, pin_memory=True); the performance
# tuning guide adds num_workers > 0 and pin_memory (a no-op without an accelerator)
DOCUMENTED = Documented(
    source="pytorch/examples imagenet/main.py (ImageFolder + torchvision transforms, "
    "DataLoader(shuffle, num_workers, pin_memory=True where CUDA is)) and PyTorch's "
    "Performance Tuning Guide; torch 2.x",
    params={},
)
DOCUMENTED_PIPELINE = "common-default"  # Pillow's decode, torchvision's transforms on PIL images


def init_worker(temp_dir: str, worker_id: int) -> None:
    """Each DataLoader worker: sequential OpenCV, and its temporary files in the loader's folder."""
    pin_worker_threads(worker_id)
    use_temp_dir(temp_dir)


def pin_worker_threads(worker_id: int) -> None:
    """OpenCV runs sequentially in a loader worker: the parallelism is the workers.

    ``setNumThreads(0)``, not 1: in a forked worker whose parent's OpenCV pool had gone idle, 1
    reconfigures the pool and blocks for ever destroying a condition variable the parent's (absent)
    pool threads were waiting on; 0 only turns the pool off. The same sequential work either way.
    """
    import sys

    cv2 = sys.modules.get("cv2")
    if cv2 is not None:
        cv2.setNumThreads(0)


class EndlessShard:
    """``DistributedSampler``'s shard for one rank, epoch after epoch (``set_epoch`` reshuffles
    the whole pool each epoch, and the ranks' shards of an epoch never overlap), as a training
    loop over epochs draws it; endless, like the sampler of a single loader."""

    def __init__(self, dataset: Any, rank: int, ranks: int, seed: int = 0) -> None:
        from torch.utils.data.distributed import DistributedSampler

        self.inner: DistributedSampler[int] = DistributedSampler(
            dataset, num_replicas=ranks, rank=rank, shuffle=True, seed=seed, drop_last=True
        )

    def __iter__(self) -> Iterator[int]:
        import itertools

        for epoch in itertools.count():
            self.inner.set_epoch(epoch)
            yield from self.inner

    def __len__(self) -> int:
        return ENDLESS


class TorchLoader:
    def __init__(
        self,
        pipeline: SamplePipeline,
        params: Mapping[str, Any],
        seed: int = 0,
        collate_fn: Any = None,
        loader_class: type | None = None,
        iterable: bool = False,
    ) -> None:
        """``iterable``: ``pipeline`` is an ``IterableDataset`` (each worker yields its own
        part; no sampler), as the copy-on-access experiment's streamed index is."""
        import torch
        from torch.utils.data import DataLoader, Dataset, RandomSampler

        workers = int(params.get("workers") or 0)
        pin = bool(params.get("pin_memory", False))
        if pin and not torch.cuda.is_available():
            raise ValueError("pin_memory needs a CUDA device")
        kwargs: dict[str, Any] = {}
        self.temp_dir: Path | None = None
        if workers > 0:
            check_tensor_handover()  # else a long TMPDIR loses every batch (unix_sockets.py)
            self.temp_dir = workers_temp_dir()  # what a killed worker leaves, close removes
            kwargs.update(
                prefetch_factor=params.get("prefetch_factor") or 2,
                persistent_workers=bool(params.get("persistent_workers", True)),
                multiprocessing_context=params.get("start_method") or "fork",
                timeout=float(params.get("batch_timeout_s") or BATCH_TIMEOUT_S),
                worker_init_fn=functools.partial(init_worker, str(self.temp_dir)),
            )
            if "in_order" in params:  # torch >= 2.6: batches as workers finish them
                kwargs["in_order"] = bool(params["in_order"])
        generator = torch.Generator().manual_seed(seed)
        sampler: Any = None
        # a training rank's shard (imgbench.loaders.ranks): DistributedSampler, epoch after epoch
        self.shard = (int(params["rank"]), int(params["ranks"])) if "rank" in params else None
        if self.shard is not None and not iterable:
            sampler = EndlessShard(pipeline, *self.shard, seed=seed)
        elif not iterable:
            sampler = RandomSampler(pipeline, num_samples=ENDLESS, generator=generator)
        try:
            self.loader = (loader_class or DataLoader)(
                cast("Dataset[Any]", pipeline),  # a map-style dataset by duck typing: len, [i]
                batch_size=int(params["batch_size"]),
                sampler=sampler,
                collate_fn=collate_fn or collate_for(pipeline.config),
                num_workers=workers,
                pin_memory=pin,
                drop_last=True,
                **kwargs,
            )
        except BaseException:
            if self.temp_dir is not None:
                shutil.rmtree(self.temp_dir, ignore_errors=True)
            raise
        self.workers = workers
        self.pipeline = pipeline
        self._iterator: Any = None
        self._pids: list[int] = []

    def batches(self) -> Iterator[Batch]:
        self._iterator = iter(self.loader)
        self._pids = self._live_pids()
        return self._iterator

    def _dataloader_iter(self) -> Any:
        """The DataLoader's own iterator (its workers, its shutdown)."""
        return self._iterator

    def _live_pids(self) -> list[int]:
        workers = getattr(self._dataloader_iter(), "_workers", None) or []
        return [w.pid for w in workers if w.pid is not None]

    def worker_pids(self) -> list[int]:
        return self._live_pids() or list(self._pids)

    def epoch_start_s(self) -> float:
        """Seconds from a new epoch's ``iter(loader)`` to its first batch."""
        start = clock()
        self._iterator = iter(self.loader)
        self._pids = sorted(set(self._pids) | set(self._live_pids()))
        next(self._iterator)
        return clock() - start

    def close(self) -> None:
        pids = list(set(self._pids) | set(self._live_pids()))
        iterator, self._iterator = self._dataloader_iter(), None
        shutdown = getattr(iterator, "_shutdown_workers", None)
        if shutdown is not None:
            with contextlib.suppress(Exception):
                shutdown()
        reap(pids)
        if self.temp_dir is not None:
            shutil.rmtree(self.temp_dir, ignore_errors=True)


def build(pipeline: SamplePipeline, params: Mapping[str, Any]) -> TorchLoader:
    return TorchLoader(pipeline, params)


def documented_cases(plan: LoaderPlan) -> list[Case]:
    """The DataLoader as PyTorch's ImageNet example builds it, at one worker per core, where an
    NVIDIA device is. Without one there is nothing to pin memory for, and the example's
    DataLoader is the common default's row at one worker per core (the plan's baseline): no
    second row of the same work."""
    import os

    from imgbench.loaders.cases import loader_case
    from imgbench.loaders.libs.dali import has_nvidia_device
    from imgbench.loaders.registry import pipeline_config

    if not has_nvidia_device():
        return []
    return [
        loader_case(
            "torch-dataloader",
            os.cpu_count() or 2,
            plan=plan,
            config=pipeline_config(DOCUMENTED_PIPELINE),
            pin_memory=True,
            documented=DOCUMENTED,
        )
    ]
