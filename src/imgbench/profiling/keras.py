"""A user's Keras ``PyDataset`` (``keras.utils.Sequence`` is its alias in Keras 3) as a loader of
the loader stage, swept over ``workers`` x ``use_multiprocessing``.

Those two settings are what a Keras user tunes: ``workers`` threads (``use_multiprocessing=False``)
or processes (``True``) run ``__getitem__`` through Keras's own ``OrderedEnqueuer``; with
``workers`` 0 or 1 and no multiprocessing Keras calls ``__getitem__`` inline in the training loop.
Batches come from Keras's data adapter (``PyDatasetAdapter.get_numpy_iterator``, what
``model.fit`` iterates), so the queue, the pool and the pickling are Keras's. Each configuration
runs on a shallow copy of the user's dataset with only those two attributes changed; epochs
restart as in ``fit`` (Keras stops its pool at each epoch's end, and that restart is measured).
"""

from __future__ import annotations

import copy
import multiprocessing
from collections.abc import Iterator, Sequence
from typing import Any

from imgbench.loaders.base import Batch, reap
from imgbench.loaders.libs.keras import pool_worker_pids

LIBRARY = "keras-pydataset"
SETTING = "keras.utils.PyDataset(workers=..., use_multiprocessing=...)"

Point = tuple[int, bool]  # (workers, use_multiprocessing)


def is_keras_dataset(obj: Any) -> bool:
    """A Keras ``PyDataset`` (or ``Sequence``), told without importing Keras."""
    return any(
        cls.__name__ in ("PyDataset", "Sequence") and cls.__module__.startswith("keras")
        for cls in type(obj).__mro__
    )


def own_point(dataset: Any) -> Point:
    return int(dataset.workers or 0), bool(dataset.use_multiprocessing)


def sweep_points(
    dataset: Any, chosen: Sequence[int] | None, cores: int
) -> tuple[list[Point], Point]:
    """``workers`` (``chosen``, else 0, 1 and cores) x ``use_multiprocessing`` (False, True),
    plus the dataset's own setting; 0 workers runs inline, so it is measured once."""
    own = own_point(dataset)
    counts = set(chosen) if chosen is not None else {0, 1, cores}
    points = {(0, False)} if 0 in counts else set()
    points.update((w, mp) for w in counts if w > 0 for mp in (False, True))
    points.add(own)
    return sorted(points), own


def label(point: Point) -> str:
    workers, mp = point
    if not uses_pool(point):
        return f"{workers} (inline)"
    return f"{workers} {'processes' if mp else 'threads'}"


def uses_pool(point: Point) -> bool:
    """Keras's adapter starts an enqueuer only for these settings; else ``__getitem__`` is
    called inline, in the loop that takes the batches."""
    workers, mp = point
    return workers > 1 or (workers > 0 and mp)


class KerasUserLoader:
    """``batches()`` yields ``(user_batch, None, None, None)`` endlessly: the user's batches as
    Keras's adapter hands them to ``fit``, with ``workers``/``use_multiprocessing`` as asked."""

    def __init__(self, dataset: Any, workers: int, use_multiprocessing: bool) -> None:
        self.dataset = copy.copy(dataset)  # shallow: the user's arrays and paths are shared
        self.dataset.workers = workers
        self.dataset.use_multiprocessing = use_multiprocessing
        self.workers = workers
        self.point = (workers, use_multiprocessing)
        self.batch_size = int(getattr(dataset, "batch_size", 0) or 1)
        pooled = uses_pool(self.point)
        self.start_method = (
            str(multiprocessing.get_start_method())
            if pooled and use_multiprocessing
            else ("threads" if pooled else None)
        )
        self.epochs = 0
        self._adapter: Any = None
        self._pids: set[int] = set()

    def batches(self) -> Iterator[Batch]:
        from keras.src.trainers.data_adapters.py_dataset_adapter import PyDatasetAdapter

        while True:
            self._adapter = PyDatasetAdapter(self.dataset, shuffle=False)
            empty = True
            for batch in self._adapter.get_numpy_iterator():
                empty = False
                yield batch, None, None, None
            self._pids.update(self.worker_pids())
            self._adapter.on_epoch_end()  # stops the enqueuer and its pool, as fit does
            self.epochs += 1
            if empty:
                raise RuntimeError("the PyDataset yields no batch (len() 0?)")

    def worker_pids(self) -> list[int]:
        """The pool's processes: children running this interpreter's command line (py-spy and
        the memory sampler are children too, with their own)."""
        if not (self.point[1] and uses_pool(self.point)):
            return []  # threads or inline: the memory sampler reads this process
        return pool_worker_pids()

    def close(self) -> None:
        pids = sorted(self._pids | set(self.worker_pids()))
        adapter, self._adapter = self._adapter, None
        if adapter is not None:
            adapter.on_epoch_end()
        reap(pids)


def keras_version() -> str | None:
    import keras

    return str(keras.__version__)
