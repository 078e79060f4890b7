"""``prefetch_generator.BackgroundGenerator``: one background thread runs the sequential
pipeline and keeps up to ``prefetch_factor`` batches ready, the posts' "prefetcher" loader.

It overlaps loading with the training step in the main thread; it does not add parallelism to
the loading itself (one thread, and the GIL), so it helps exactly as much as the step leaves
idle time. Its thread is a daemon; ``close`` tells the generator to stop and drains the queue
so a thread blocked on a full queue can finish.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator, Mapping
from typing import Any

from imgbench.loaders.base import BATCH_TIMEOUT_S, Batch, LoaderError
from imgbench.loaders.pipeline import SamplePipeline, collate_for
from imgbench.loaders.threads import endless_batches


class PrefetchLoader:
    def __init__(self, pipeline: SamplePipeline, params: Mapping[str, Any]) -> None:
        self.pipeline = pipeline
        self.batch_size = int(params["batch_size"])
        self.max_prefetch = int(params.get("prefetch_factor") or 2)
        self.timeout = float(params.get("batch_timeout_s") or BATCH_TIMEOUT_S)
        self.collate = collate_for(pipeline.config)
        self._stop = threading.Event()
        self._generator: Any = None

    def _produce(self) -> Iterator[Batch]:
        for indices in endless_batches(len(self.pipeline), self.batch_size):
            if self._stop.is_set():
                return
            yield self.collate([self.pipeline[i] for i in indices])

    def batches(self) -> Iterator[Batch]:
        from prefetch_generator import BackgroundGenerator

        self.pipeline.build()
        self._generator = BackgroundGenerator(self._produce(), max_prefetch=self.max_prefetch)
        return self._consume(self._generator)

    def _consume(self, generator: Any) -> Iterator[Batch]:
        # BackgroundGenerator.next() blocks without a timeout; read its queue with one instead.
        # Items are (True, batch), or (False, exception) when the generator raised or ended.
        while True:
            try:
                ok, item = generator.queue.get(timeout=self.timeout)
            except queue.Empty:
                raise LoaderError(
                    f"prefetch_generator: no batch within {self.timeout:g} s"
                ) from None
            if not ok:
                if item is StopIteration:
                    raise LoaderError("the background generator stopped")
                raise item
            yield item

    def worker_pids(self) -> list[int]:
        return []

    def close(self) -> None:
        self._stop.set()
        generator, self._generator = self._generator, None
        for _ in range(20):  # unblock put()s on a full queue until the thread ends
            if generator is None or not generator.is_alive():
                break
            while True:
                try:
                    generator.queue.get_nowait()
                except queue.Empty:
                    break
            generator.join(timeout=0.25)


def build(pipeline: SamplePipeline, params: Mapping[str, Any]) -> PrefetchLoader:
    return PrefetchLoader(pipeline, params)
