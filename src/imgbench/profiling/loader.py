"""A user's Dataset or DataLoader as a loader of the loader stage (``imgbench.loaders.base``).

For each worker count the user's loader is rebuilt with the same dataset, batch size, sampler,
collate function and worker settings, and only ``num_workers`` changed. The stream never ends:
at the end of an epoch a new one starts, as in a training loop (its restart is part of the
measurement). The dataset is wrapped in :class:`GuardedDataset`, so a sample that raises is
reported with its index, from the main process or from any worker.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Mapping
from typing import Any, cast

from imgbench.errors import one_line
from imgbench.loaders.base import Batch, reap

INDEX_PATTERN = re.compile(r"dataset\[(\d+)\] raised")


class SampleError(RuntimeError):
    """``dataset[i] raised Type: message``: the user's sample error with its index."""


def failed_index(reason: str) -> int | None:
    """The sample index a failure names, if it names one."""
    found = INDEX_PATTERN.search(reason)
    return int(found.group(1)) if found else None


class GuardedDataset:
    """The user's map-style dataset; an exception in ``[i]`` becomes a SampleError naming i.

    Everything else (``len``, attributes, ``__getitems__``) is the user's own."""

    def __init__(self, dataset: Any) -> None:
        self.dataset = dataset

    def __len__(self) -> int:
        return len(self.dataset)

    def __getitem__(self, index: int) -> Any:
        try:
            return self.dataset[index]
        except Exception as exc:
            raise SampleError(f"dataset[{index}] raised {one_line(exc)}") from None

    def __getattr__(self, name: str) -> Any:
        if name == "dataset":  # not set yet (unpickling): no recursion through __getattr__
            raise AttributeError(name)
        return getattr(self.dataset, name)

    def __getstate__(self) -> dict[str, Any]:
        return {"dataset": self.dataset}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.dataset = state["dataset"]


def loader_settings(loader: Any) -> dict[str, Any]:
    """What a user's DataLoader was built with, to rebuild it with other worker counts."""
    settings: dict[str, Any] = {
        "collate_fn": loader.collate_fn,
        "pin_memory": loader.pin_memory,
        "drop_last": loader.drop_last,
        "worker_init_fn": loader.worker_init_fn,
        "multiprocessing_context": loader.multiprocessing_context,
        "generator": loader.generator,
    }
    if loader.num_workers > 0:
        settings["prefetch_factor"] = loader.prefetch_factor
        settings["persistent_workers"] = loader.persistent_workers
    return settings


def start_method(settings: Mapping[str, Any]) -> str:
    context = settings.get("multiprocessing_context")
    if context is None:
        import multiprocessing

        return str(multiprocessing.get_start_method())
    return str(getattr(context, "_name", context))


class UserLoader:
    """``batches()`` yields ``(user_batch, None, None, None)``: the user's batch untouched, no
    per-part times (the stacks tell where the time goes)."""

    def __init__(
        self,
        source: Any,
        workers: int,
        batch_size: int,
        timeout_s: float,
    ) -> None:
        from torch.utils.data import DataLoader, IterableDataset

        self.workers = workers
        if isinstance(source, DataLoader):
            dataset = source.dataset
            settings = loader_settings(source)
            batch_size = source.batch_size or batch_size
            sampler = None if isinstance(dataset, IterableDataset) else source.sampler
            batch_sampler = source.batch_sampler if source.batch_size is None else None
        else:
            dataset, settings, sampler, batch_sampler = source, {}, None, None
        kwargs: dict[str, Any] = dict(settings)
        if workers > 0:
            kwargs.setdefault("prefetch_factor", 2)
            kwargs["persistent_workers"] = True  # epochs restart without new workers
            kwargs["timeout"] = timeout_s
        else:
            for key in ("prefetch_factor", "persistent_workers", "multiprocessing_context"):
                kwargs.pop(key, None)
        if not isinstance(dataset, IterableDataset):
            dataset = cast("Any", GuardedDataset(dataset))
        if batch_sampler is not None:
            kwargs.update(batch_sampler=batch_sampler)
            kwargs.pop("drop_last", None)
        else:
            kwargs.update(batch_size=batch_size)
            if sampler is not None:
                kwargs.update(sampler=sampler)
            elif not isinstance(dataset, IterableDataset):
                kwargs.update(shuffle=True)
        self.batch_size = batch_size
        self.start_method = start_method(settings) if workers > 0 else None
        self.loader = DataLoader(dataset, num_workers=workers, **kwargs)
        self._iterator: Any = None
        self._pids: set[int] = set()
        self.epochs = 0

    def batches(self) -> Iterator[Batch]:
        return self._endless()

    def _endless(self) -> Iterator[Batch]:
        while True:
            self._iterator = iter(self.loader)  # persistent workers: the same processes
            self._pids.update(self._live_pids())
            empty = True
            for batch in self._iterator:
                empty = False
                yield batch, None, None, None
            self.epochs += 1
            if empty:
                raise RuntimeError("the loader yields no batch (an empty dataset?)")

    def _live_pids(self) -> list[int]:
        workers = getattr(self._iterator, "_workers", None) or []
        return [w.pid for w in workers if w.pid is not None]

    def worker_pids(self) -> list[int]:
        live = self._live_pids()
        self._pids.update(live)
        return live or sorted(self._pids)

    def close(self) -> None:
        pids = sorted(self._pids | set(self._live_pids()))
        iterator, self._iterator = self._iterator, None
        shutdown = getattr(iterator, "_shutdown_workers", None)
        if shutdown is not None:
            with contextlib.suppress(Exception):
                shutdown()
        reap(pids)


def images_in(batch: Any, default: int) -> int:
    """Images in a user's batch: the leading size of its first array-like part (a tensor, an
    ``(images, labels)`` pair, a dict), or the length of a list of samples of the batch size."""
    leading = _leading(batch)
    if isinstance(batch, list | tuple) and len(batch) == default and leading != default:
        return default  # a list of per-sample arrays, not (images, labels)
    return default if leading is None else leading


def _leading(batch: Any) -> int | None:
    if hasattr(batch, "shape") and len(batch.shape) > 0:
        return int(batch.shape[0])
    if isinstance(batch, Mapping):
        return next((n for v in batch.values() if (n := _leading(v)) is not None), None)
    if isinstance(batch, list | tuple) and batch:
        return _leading(batch[0]) if not isinstance(batch[0], str | bytes) else len(batch)
    return None


def batch_parts(batch: Any, limit: int = 8) -> list[dict[str, Any]]:
    """Shape and dtype of each array in a user's batch (tensors, arrays, in tuples, lists or
    dicts), for the row and for the advice (float32 batches cost more to ship than uint8)."""
    parts: list[dict[str, Any]] = []

    def walk(value: Any, depth: int) -> None:
        if len(parts) >= limit or depth > 3:
            return
        if hasattr(value, "shape") and hasattr(value, "dtype"):
            dtype = str(value.dtype)  # TensorFlow's reads "<dtype: 'float32'>"; its name is plain
            if dtype.startswith("<dtype:"):
                dtype = str(value.dtype.name)
            parts.append({"shape": [int(n) for n in value.shape], "dtype": dtype})
        elif isinstance(value, Mapping):
            for item in value.values():
                walk(item, depth + 1)
        elif isinstance(value, list | tuple):
            for item in value[:limit]:
                walk(item, depth + 1)

    walk(batch, 0)
    return parts
