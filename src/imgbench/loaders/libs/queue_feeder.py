"""A bounded-queue feeder: ``workers`` threads each take the next index, run the pipeline and put
the sample on a queue of ``prefetch_factor x batch_size`` slots; the main thread collates.

This is the hand-written loader of the posts (a ``queue.Queue`` and a few ``threading.Thread``s).
Unlike the thread-pool loader, samples, not batches, are the unit of work, so the collate runs in
the consumer, and the bounded queue is the back-pressure. Threads are daemons and poll a stop
flag, so ``close`` ends every thread that is not stuck inside a sample.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from imgbench.loaders.base import BATCH_TIMEOUT_S, Batch, LoaderError
from imgbench.loaders.pipeline import SamplePipeline, collate_for

_POLL_S = 0.1


class QueueFeeder:
    def __init__(self, pipeline: SamplePipeline, params: Mapping[str, Any]) -> None:
        self.pipeline = pipeline
        self.threads = max(1, int(params.get("workers") or 1))
        self.batch_size = int(params["batch_size"])
        self.capacity = self.batch_size * int(params.get("prefetch_factor") or 2)
        self.timeout = float(params.get("batch_timeout_s") or BATCH_TIMEOUT_S)
        self.collate = collate_for(pipeline.config)
        self._queue: queue.Queue[tuple[bool, Any]] = queue.Queue(self.capacity)
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._rng = np.random.default_rng(0)
        self._order: list[int] = []
        self._threads: list[threading.Thread] = []

    def _next_index(self) -> int:
        with self._lock:
            if not self._order:
                self._order = self._rng.permutation(len(self.pipeline)).tolist()
            return self._order.pop()

    def _feed(self) -> None:
        while not self._stop.is_set():
            try:
                item: tuple[bool, Any] = (True, self.pipeline[self._next_index()])
            except Exception as exc:  # handed to the consumer, which raises it
                item = (False, exc)
            while not self._stop.is_set():
                try:
                    self._queue.put(item, timeout=_POLL_S)
                    break
                except queue.Full:
                    continue
            if not item[0]:
                return

    def batches(self) -> Iterator[Batch]:
        self.pipeline.build()
        for n in range(self.threads):
            thread = threading.Thread(target=self._feed, name=f"feeder-{n}", daemon=True)
            thread.start()
            self._threads.append(thread)
        return self._consume()

    def _consume(self) -> Iterator[Batch]:
        while True:
            samples: list[Any] = []
            while len(samples) < self.batch_size:
                try:
                    ok, item = self._queue.get(timeout=self.timeout)
                except queue.Empty:
                    raise LoaderError(
                        f"queue feeder: no sample within {self.timeout:g} s"
                    ) from None
                if not ok:
                    raise item
                samples.append(item)
            yield self.collate(samples)

    def worker_pids(self) -> list[int]:
        return []

    def close(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=2 * _POLL_S)
        self._threads = []


def build(pipeline: SamplePipeline, params: Mapping[str, Any]) -> QueueFeeder:
    return QueueFeeder(pipeline, params)
