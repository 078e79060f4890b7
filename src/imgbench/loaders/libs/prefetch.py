"""``prefetch_generator.BackgroundGenerator`` as the posts use it: ``DataLoaderX``, a DataLoader
whose iterator runs on a background thread::

    class DataLoaderX(DataLoader):
        def __iter__(self):
            return BackgroundGenerator(super().__iter__())

The DataLoader underneath is the reference one (``imgbench.loaders.libs.torch_dataloader``: same
sampler, workers, start method, collate), so a row compares with the DataLoader's row at the
same worker count. At 0 workers the background thread runs the whole pipeline (the single-thread
prefetcher); with workers it only moves finished batches ahead (``max_prefetch=1``, the
package's default). Either way it overlaps loading with the training step in the main thread,
so its benefit shows in the AU rows (an emulated step), not in a loop that only pulls batches.

``close`` stops the background thread: a stop check between batches (imgbench's, for teardown;
the recipe has none), the DataLoader's workers shut down, and the queue drained so a thread
blocked on a full queue can finish.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator, Mapping
from typing import Any

from imgbench.loaders.base import BATCH_TIMEOUT_S, Batch, LoaderError
from imgbench.loaders.libs.torch_dataloader import TorchLoader
from imgbench.loaders.pipeline import SamplePipeline

JOIN_TIMEOUT_S = 5.0


def _until(stop: threading.Event, batches: Iterator[Any]) -> Iterator[Any]:
    for batch in batches:
        if stop.is_set():
            return
        yield batch


def dataloaderx_class(stop: threading.Event, inner: list[Any]) -> type:
    """The posts' ``DataLoaderX``, with a stop check for teardown; ``inner`` gets the
    DataLoader's own iterator (its workers are reported and shut down through it)."""
    from prefetch_generator import BackgroundGenerator
    from torch.utils.data import DataLoader

    class DataLoaderX(DataLoader):
        def __iter__(self) -> Any:
            batches = super().__iter__()
            inner[:] = [batches]
            return BackgroundGenerator(_until(stop, batches))

    return DataLoaderX


class PrefetchLoader(TorchLoader):
    def __init__(self, pipeline: SamplePipeline, params: Mapping[str, Any]) -> None:
        self._stop = threading.Event()
        self._inner: list[Any] = []
        super().__init__(pipeline, params, loader_class=dataloaderx_class(self._stop, self._inner))
        self.timeout = float(params.get("batch_timeout_s") or BATCH_TIMEOUT_S)
        self.extra = {"background_max_prefetch": 1, "background_threads": 1}

    def _dataloader_iter(self) -> Any:
        return self._inner[0] if self._inner else None

    def batches(self) -> Iterator[Batch]:
        self.pipeline.build()
        generator = super().batches()
        return self._consume(generator)

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

    def epoch_start_s(self) -> float:
        """Seconds from a new epoch's ``iter(loader)`` to its first batch (the old epoch's
        background thread is stopped first)."""
        self._stop_background()
        self._stop.clear()
        return super().epoch_start_s()

    def _stop_background(self) -> None:
        self._stop.set()
        generator = self._iterator
        for _ in range(int(JOIN_TIMEOUT_S / 0.25)):
            if generator is None or not generator.is_alive():
                break
            while True:  # unblock a put() on a full queue
                try:
                    generator.queue.get_nowait()
                except queue.Empty:
                    break
            generator.join(timeout=0.25)

    def close(self) -> None:
        self._stop_background()
        super().close()


def build(pipeline: SamplePipeline, params: Mapping[str, Any]) -> PrefetchLoader:
    return PrefetchLoader(pipeline, params)
