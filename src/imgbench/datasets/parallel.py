"""Process pool for the dataset tools (scan, synth): every core, bounded memory, thread safe.

Why forkserver: the harness may already hold threads (torch, OpenMP, pyvips) when it asks for a
dataset, and ``fork`` from a threaded process can deadlock the children. The forkserver preloads
the dataset modules once, so each worker still starts in milliseconds.
"""

from __future__ import annotations

import multiprocessing as mp
import multiprocessing.pool
import os
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")

_PRELOAD = ["imgbench.datasets.scan", "imgbench.datasets.synth", "imgbench.datasets.bank"]


def cpu_count() -> int:
    """Cores this process may use (respects affinity masks and cgroup-pinned CI runners)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def _init_worker() -> None:
    # One thread per worker: the pool already uses every core.
    try:
        import cv2

        cv2.setNumThreads(1)
    except ImportError:
        pass


def _init_pool_worker() -> None:
    # a pool's processes only run the dataset tools: their heap may be tuned (heap.py)
    from .heap import pin_mmap_threshold

    _init_worker()
    pin_mmap_threshold()


def _context() -> mp.context.BaseContext:
    methods = mp.get_all_start_methods()
    if "forkserver" in methods:
        ctx = mp.get_context("forkserver")
        ctx.set_forkserver_preload(_PRELOAD)
        return ctx
    return mp.get_context("spawn")


class WorkerPool:
    """A process pool opened once and mapped over many times; serial when ``workers <= 1``.

    ``imap`` is ordered and bounded like the module's :func:`imap`; the scan maps one batch of
    files at a time through the same pool, so nothing waits on a second pool start.
    """

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self._pool: mp.pool.Pool | None = None

    def __enter__(self) -> WorkerPool:
        if self.workers > 1:
            self._pool = _context().Pool(self.workers, initializer=_init_pool_worker)
        else:
            _init_worker()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._pool is not None:
            self._pool.terminate()  # what ``with Pool()`` does
            self._pool.join()
            self._pool = None

    def imap(
        self, func: Callable[[T], R], items: Iterable[T], *, chunksize: int = 8
    ) -> Iterator[R]:
        """Ordered results of ``func`` over ``items``, a few chunks per worker in flight.

        ``Pool.imap`` alone would drain ``items`` as fast as it can into its task queue (1M
        pending tasks for 1M images); a semaphore keeps at most a few chunks per worker in
        flight, so memory stays flat in the number of items.
        """
        if self._pool is None:
            yield from map(func, items)
            return
        window = threading.Semaphore(chunksize * self.workers * 4)
        stop = threading.Event()

        def feed() -> Iterator[T]:
            for item in items:
                while not window.acquire(timeout=0.1):
                    if stop.is_set():
                        return
                if stop.is_set():
                    return
                yield item

        try:
            for result in self._pool.imap(func, feed(), chunksize=chunksize):
                window.release()
                yield result
        finally:
            stop.set()  # before the pool's terminate() joins the feeding thread


def imap(
    func: Callable[[T], R],
    items: Iterable[T],
    *,
    workers: int,
    chunksize: int = 8,
) -> Iterator[R]:
    """Ordered ``imap`` over ``items`` in a pool of its own; serial when ``workers <= 1``.

    Bounded: see :meth:`WorkerPool.imap`.
    """
    with WorkerPool(workers) as pool:
        yield from pool.imap(func, items, chunksize=chunksize)
