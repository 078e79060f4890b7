"""Ray Data on a local Ray cluster: the same pipeline as ``map_batches`` tasks, streamed to the
training loop with ``iter_torch_batches``. The row that would scale past one machine.

Each case starts its own cluster (``ray.init(num_cpus=cores, include_dashboard=False)``, session
files under ``IMGBENCH_RAY_TMP`` or ``<tmp>/imgbench-ray``) and shuts it down on close, so no
Ray process outlives the case; ``ray_init_s`` records the start-up separately from the time to
first batch. ``workers`` is the ``concurrency`` of the map (tasks at once); the object store
memory Ray may fill ahead is bounded to ``prefetch_factor x workers`` batches. Samples are indices
into the pool, repeated to make long epochs, so Ray's per-epoch start-up does not dominate.
"""

from __future__ import annotations

import gc
import os
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import psutil

from imgbench.loaders.base import Batch, clock
from imgbench.loaders.pipeline import NO_AUGMENT, STAGES, SamplePipeline

TMP_ENV = "IMGBENCH_RAY_TMP"
RAY_DATA_THREADS = ("StreamingExecutor", "iter_threaded", "ray-data")  # name prefixes
THREADS_EXIT_S = 30.0
EPOCH_SAMPLES = 4096


def _join_threads(prefixes: tuple[str, ...], timeout_s: float) -> list[str]:
    """Wait for the threads whose names start with one of ``prefixes``; returns those still alive."""
    deadline = time.monotonic() + timeout_s
    for thread in threading.enumerate():
        if thread is threading.current_thread() or not thread.name.startswith(prefixes):
            continue
        thread.join(max(0.0, deadline - time.monotonic()))
    return [t.name for t in threading.enumerate() if t.name.startswith(prefixes) and t.is_alive()]


def ray_temp_dir() -> str:
    # Ray's unix sockets live here: keep the path short (107 bytes at most on Linux).
    path = Path(os.environ.get(TMP_ENV) or Path(tempfile.gettempdir()) / "imgbench-ray")
    path.mkdir(parents=True, exist_ok=True)
    return str(path)


def load_rows(batch: dict[str, np.ndarray], pipeline: SamplePipeline) -> dict[str, np.ndarray]:
    """One Ray task: read, decode and augment the batch's samples, then stack them."""
    samples = [pipeline[int(i) % len(pipeline)] for i in batch["id"]]
    start = clock()
    images = np.stack([np.asarray(s[0]) for s in samples])
    labels = np.asarray([s[1] for s in samples], dtype=np.int64)
    times = np.asarray([s[2] for s in samples], dtype=np.float64)
    collate_s = np.full(len(samples), (clock() - start) / len(samples))
    return {"image": images, "label": labels, "stage_s": times, "collate_s": collate_s}


class RayDataLoader:
    def __init__(self, pipeline: SamplePipeline, params: Mapping[str, Any]) -> None:
        if pipeline.config.augment == NO_AUGMENT:
            raise ValueError("ray-data needs same-size images: use an augmentation pipeline")
        self.pipeline = pipeline
        self.batch_size = int(params["batch_size"])
        self.concurrency = max(1, int(params.get("workers") or 1))
        batch_bytes = self.batch_size * 3 * 224 * 224 * 4  # float32 3x224x224
        self.ahead_bytes = int(params.get("prefetch_factor") or 2) * self.concurrency * batch_bytes
        self.extra: dict[str, Any] = {}  # LoaderRun copies it into the row
        self._ray: Any = None
        self._generator: Any = None

    def batches(self) -> Iterator[Batch]:
        import ray

        start = clock()
        ray.init(
            num_cpus=os.cpu_count() or 2,
            include_dashboard=False,
            log_to_driver=False,
            _temp_dir=ray_temp_dir(),
            configure_logging=False,
        )
        self.extra["ray_init_s"] = clock() - start
        self._ray = ray
        self._generator = self._stream()
        return self._generator

    def _stream(self) -> Iterator[Batch]:
        import ray.data

        pipeline, n = self.pipeline, len(self.pipeline)
        repeat = max(1, EPOCH_SAMPLES // n)
        ctx = ray.data.DataContext.get_current()
        ctx.enable_progress_bars = False
        # Bound what Ray may compute ahead, as prefetch_factor bounds the DataLoader: unbounded,
        # it buffers whole epochs during start-up and the timed rounds only drain the buffer.
        ctx.execution_options.resource_limits = ray.data.ExecutionResources(
            object_store_memory=self.ahead_bytes
        )
        while True:  # one long epoch after another
            dataset = ray.data.range(n * repeat).map_batches(
                load_rows,  # type: ignore[arg-type]  # ray hints fn(batch); fn_args adds pipeline
                fn_args=(pipeline,),
                batch_size=self.batch_size,
                compute=ray.data.TaskPoolStrategy(size=self.concurrency),
                batch_format="numpy",
            )
            batches = iter(
                dataset.iter_torch_batches(
                    batch_size=self.batch_size, drop_last=True, prefetch_batches=1
                )
            )
            try:
                for batch in batches:
                    stage_s = batch["stage_s"]
                    yield batch["image"], batch["label"], stage_s, float(batch["collate_s"].sum())
            finally:
                close = getattr(batches, "close", None)
                if close is not None:
                    close()  # stops Ray Data's executor threads (see close())

    def worker_pids(self) -> list[int]:
        pids = []
        for child in psutil.Process().children(recursive=True):
            try:
                if child.name().startswith("ray::"):
                    pids.append(child.pid)
            except psutil.NoSuchProcess:
                continue
        return pids

    def close(self) -> None:
        generator, self._generator = self._generator, None
        if generator is not None:
            generator.close()  # ends Ray's streaming iteration while the cluster still runs
            del generator
            gc.collect()
        # Ray exits the whole process when a thread uses the Ray worker after ray.shutdown()
        # ("The core worker has already been shutdown ... The process will exit"): let Ray
        # Data's executor threads finish first.
        _join_threads(RAY_DATA_THREADS, timeout_s=THREADS_EXIT_S)
        if self._ray is not None and self._ray.is_initialized():
            self._ray.shutdown()
        self._ray = None


def build(pipeline: SamplePipeline, params: Mapping[str, Any]) -> RayDataLoader:
    assert len(STAGES) == 3  # the stage_s columns load_rows returns
    return RayDataLoader(pipeline, params)
