"""A thread-pool loader: each task loads and collates one whole batch; ``workers`` threads.

Threads share the process, so nothing is pickled or copied between workers; they run in
parallel only where the libraries release the GIL (file reads, OpenCV and libjpeg decodes,
most OpenCV kernels). A window of ``prefetch_factor x workers`` batches is kept in flight, as
the DataLoader does. The pool's threads are daemons: a sample that never returns cannot keep
the interpreter from exiting.
"""

from __future__ import annotations

import multiprocessing
import threading
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from multiprocessing.pool import AsyncResult, ThreadPool
from typing import Any

import numpy as np

from imgbench.loaders.base import BATCH_TIMEOUT_S, Batch, LoaderError
from imgbench.loaders.pipeline import SamplePipeline, collate_for

JOIN_TIMEOUT_S = 5.0  # how long close() waits for the tasks in flight


def endless_batches(n: int, batch_size: int, seed: int = 0) -> Iterator[list[int]]:
    """Index lists of reshuffled epochs, without end; batches may span an epoch boundary."""
    rng = np.random.default_rng(seed)
    pending: list[int] = []
    while True:
        pending.extend(rng.permutation(n).tolist())
        while len(pending) >= batch_size:
            yield pending[:batch_size]
            del pending[:batch_size]


def load_batch(
    pipeline: SamplePipeline, collate: Callable[[list], Batch], indices: list[int]
) -> Batch:
    return collate([pipeline[i] for i in indices])


class ThreadLoader:
    def __init__(self, pipeline: SamplePipeline, params: Mapping[str, Any]) -> None:
        self.pipeline = pipeline
        self.threads = max(1, int(params.get("workers") or 1))
        self.batch_size = int(params["batch_size"])
        self.window = self.threads * int(params.get("prefetch_factor") or 2)
        self.timeout = float(params.get("batch_timeout_s") or BATCH_TIMEOUT_S)
        self.collate = collate_for(pipeline.config)
        self.pool: ThreadPool | None = None

    def batches(self) -> Iterator[Batch]:
        self.pipeline.build()  # import libraries once, not racing in every thread
        self.pool = ThreadPool(self.threads)
        return self._run(self.pool)

    def _run(self, pool: ThreadPool) -> Iterator[Batch]:
        indices = endless_batches(len(self.pipeline), self.batch_size)
        inflight: deque[AsyncResult] = deque()
        while True:
            while len(inflight) < self.window:
                args = (self.pipeline, self.collate, next(indices))
                inflight.append(pool.apply_async(load_batch, args))
            try:
                yield inflight.popleft().get(timeout=self.timeout)
            except multiprocessing.TimeoutError:  # raised without a message
                raise LoaderError(f"no batch within {self.timeout:g} s") from None

    def worker_pids(self) -> list[int]:
        return []

    def close(self) -> None:
        if self.pool is not None:
            pool, self.pool = self.pool, None
            pool.terminate()
            # wait for the tasks in flight (a decode takes milliseconds): a thread still inside
            # C++ code when the interpreter exits aborts it ("terminate called without an active
            # exception"); a stuck one is abandoned after the wait (they are daemons)
            joiner = threading.Thread(target=pool.join, daemon=True)
            joiner.start()
            joiner.join(timeout=JOIN_TIMEOUT_S)


def build(pipeline: SamplePipeline, params: Mapping[str, Any]) -> ThreadLoader:
    return ThreadLoader(pipeline, params)
