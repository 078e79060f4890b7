"""Process pool for the dataset tools (scan, synth): every core, bounded memory, thread safe.

Why forkserver: the harness may already hold threads (torch, OpenMP, pyvips) when it asks for a
dataset, and ``fork`` from a threaded process can deadlock the children. The forkserver preloads
the dataset modules once, so each worker still starts in milliseconds.

Why ``concurrent.futures`` and not ``multiprocessing.Pool``: when a worker dies (the kernel's OOM
killer, a decoder that crashes on a hostile file), ``Pool`` starts another and waits forever for
the lost task's result; ``ProcessPoolExecutor`` marks itself broken, and the tool stops with an
error that names what the worker was doing.
"""

from __future__ import annotations

import collections
import concurrent.futures
import itertools
import multiprocessing as mp
import os
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

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


class WorkerDiedError(ChildProcessError):
    """A pool's worker process ended in the middle of a task (killed, or crashed)."""


def _apply_chunk(func: Callable[[T], R], chunk: list[T]) -> list[R]:
    return [func(item) for item in chunk]


class WorkerPool:
    """A process pool opened once and mapped over many times; serial when ``workers <= 1``.

    ``imap`` is ordered and bounded like the module's :func:`imap`; the scan maps one batch of
    files at a time through the same pool, so nothing waits on a second pool start.
    """

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self._executor: concurrent.futures.ProcessPoolExecutor | None = None

    def __enter__(self) -> WorkerPool:
        if self.workers > 1:
            self._executor = concurrent.futures.ProcessPoolExecutor(
                self.workers, mp_context=_context(), initializer=_init_pool_worker
            )
        else:
            _init_worker()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._executor is not None:
            # tasks not yet started are dropped; a running one (at most a chunk) finishes
            self._executor.shutdown(wait=True, cancel_futures=True)
            self._executor = None

    def imap(
        self, func: Callable[[T], R], items: Iterable[T], *, chunksize: int = 8
    ) -> Iterator[R]:
        """Ordered results of ``func`` over ``items``, a few chunks per worker in flight.

        At most four chunks of ``chunksize`` items per worker are submitted ahead of the
        results taken, so memory stays flat in the number of items (``Pool.imap`` alone would
        drain ``items`` into its task queue: 1M pending tasks for 1M images). Raises
        :class:`WorkerDiedError` when a worker dies, naming the first item of each unfinished chunk.
        """
        if self._executor is None:
            yield from map(func, items)
            return
        executor = self._executor
        source = iter(items)
        in_flight: collections.deque[tuple[concurrent.futures.Future[list[R]], T]] = (
            collections.deque()
        )

        def submit() -> bool:
            chunk = list(itertools.islice(source, chunksize))
            if chunk:
                in_flight.append((executor.submit(_apply_chunk, func, chunk), chunk[0]))
            return bool(chunk)

        try:
            while len(in_flight) < self.workers * 4 and submit():
                pass
        except BrokenProcessPool as exc:  # a worker died before the queue was full
            raise _died(func, in_flight, exc) from None
        while in_flight:
            try:
                results = in_flight[0][0].result()
                in_flight.popleft()
                submit()  # the pool may break here too, after this chunk came back whole
            except BrokenProcessPool as exc:
                raise _died(func, in_flight, exc) from None
            yield from results


def _died(
    func: Callable[..., object],
    in_flight: Iterable[tuple[concurrent.futures.Future[Any], object]],
    exc: BaseException,
) -> WorkerDiedError:
    """The error for a broken pool: it fails every unfinished chunk and does not say whose worker
    died, so name them all (the oldest may have waited in the queue behind the culprit)."""
    name = getattr(func, "__name__", repr(func))
    unfinished = [f for fut, f in in_flight if not fut.done() or fut.exception() is not None]
    starts = ", ".join(f"{f!r:.60}" for f in unfinished[:8])
    more = f" and {len(unfinished) - 8} more" if len(unfinished) > 8 else ""
    return WorkerDiedError(
        f"a worker process died while running {name} on one of the chunks in "
        f"flight, starting at {starts}{more}: {exc}"
    )


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
