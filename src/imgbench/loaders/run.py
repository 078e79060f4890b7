"""One loader under measurement: the harness times ``step`` (one batch), this records the rest.

``start`` builds the stream, times the first batch (worker start-up included), checks it (the
caller's ``check``: shape, dtype, values, labels; a wrong one stops the case before any timing)
and drains what the workers computed ahead meanwhile (at least ``drain_batches``: workers x
prefetch_factor, then until batches have to be waited for); ``step`` pulls the next batch under
a deadline, forces it to a contiguous tensor, adds its stage times and, for AU cases, runs the
emulated training step; ``close`` measures a new epoch's start where the loader has epochs, stops
the memory sampler, shuts the loader down, checks that no worker survived, and fills the row's
``extra`` (the harness reads it after ``close``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import psutil

from imgbench.errors import one_line
from imgbench.loaders.au import ComputeStep, accelerator_utilisation
from imgbench.loaders.base import (
    BATCH_TIMEOUT_S,
    FIRST_BATCH_TIMEOUT_S,
    Batch,
    Loader,
    LoaderError,
    clock,
    deadline,
    reap,
)
from imgbench.loaders.memory import DEFAULT_INTERVAL_S, MemorySampler
from imgbench.loaders.pipeline import batch_images, force
from imgbench.loaders.stages import StageTimes, stage_extra

DRAIN_WAIT_S = 0.002  # a next() this slow waited for a batch to be made
DRAIN_MAX_BATCHES = 512
DRAIN_MAX_S = 60.0


class BatchCheckError(LoaderError):
    """The first batch is not what the pipeline must produce; the message says what differs."""


class LoaderRun:
    def __init__(
        self,
        loader: Loader,
        name: str,
        *,
        parallel: int,
        warmup_batches: int,
        drain_batches: int = 0,
        compute: ComputeStep | None = None,
        batch_timeout_s: float = BATCH_TIMEOUT_S,
        first_batch_timeout_s: float = FIRST_BATCH_TIMEOUT_S,
        memory_interval_s: float = DEFAULT_INTERVAL_S,
        check: Callable[[Batch], str | None] | None = None,
        count_images: Callable[[Batch], int] = batch_images,
    ) -> None:
        self.loader = loader
        self.name = name
        self.parallel = parallel
        self.warmup_batches = warmup_batches
        self.drain_batches = drain_batches
        self.compute = compute
        self.batch_timeout_s = batch_timeout_s
        self.first_batch_timeout_s = first_batch_timeout_s
        self.check = check  # the first batch's problem, or None
        self.count_images = count_images  # images in a batch (a user's batch has its own shape)
        self.extra: dict[str, Any] = {}
        self.sampler = MemorySampler(loader.worker_pids, interval_s=memory_interval_s)
        self._iterator: Iterator[Batch] | None = None
        self._steps = 0
        self._images = 0
        self._latencies: list[float] = []
        self._compute_s = 0.0
        self._wall_s = 0.0
        self._stages = StageTimes()
        self._cpu_start: Any = None
        self._cpu_clock = 0.0
        self._tree_cpu_start = 0.0
        self._steady_from_s = 0.0
        self._failed = False
        self._closed = False
        self._seen_pids: set[int] = set()

    def start(self) -> None:
        """Start the workers and wait for the first batch; on failure everything is shut down."""
        try:
            self.sampler.start()
            begin = clock()
            with deadline(self.first_batch_timeout_s, f"{self.name}: first batch"):
                self._iterator = self.loader.batches()
                first = next(self._iterator)
                force(first)
            self.extra["time_to_first_batch_s"] = clock() - begin
            self._check_first(first)
            del first  # a worker's shared-memory batch: not kept through the timed rounds
            with deadline(self.first_batch_timeout_s, f"{self.name}: draining the prefetch"):
                self.extra["drained_batches"] = self._drain()
            self._seen_pids.update(self.loader.worker_pids())
        except BaseException as exc:
            self._failed = True
            self.close()
            error = _as_loader_error(self.name, exc)
            if error is exc:
                raise
            raise error from exc

    def _check_first(self, batch: Batch) -> None:
        """Check the first batch (untimed); BatchCheckError when it is wrong."""
        if self.check is None:
            return
        from imgbench.loaders.checks import summary

        problem = self.check(batch)
        self.extra["first_batch_check"] = problem or "pass"
        if problem:
            raise BatchCheckError(f"{self.name}: first batch check failed: {problem}")
        self.extra["first_batch"] = summary(batch)

    def _drain(self) -> int:
        """Pull what the loader computed ahead while starting, untimed: at least
        ``drain_batches``, then on until two batches in a row had to be waited for (the queue is
        empty: from here on batches arrive as fast as they are made). Ray Data, for one, computes
        far past its nominal prefetch during its start-up."""
        assert self._iterator is not None
        if self.drain_batches <= 0:
            return 0
        pulled = waited = 0
        begin = clock()
        while pulled < DRAIN_MAX_BATCHES and clock() - begin < DRAIN_MAX_S:
            start = clock()
            force(next(self._iterator))
            pulled += 1
            waited = waited + 1 if clock() - start >= DRAIN_WAIT_S else 0
            if pulled >= self.drain_batches and waited >= 2:
                break
        return pulled

    def pull(self) -> Batch:
        """The next batch under the batch deadline, outside the measured steps (what a caller
        times itself, e.g. ``imgbench profile``'s AU and stack-sampling phases)."""
        if self._iterator is None:
            raise LoaderError(f"{self.name}: a batch pulled before start()")
        try:
            with deadline(self.batch_timeout_s, self.name):
                batch = next(self._iterator)
                force(batch)
        except BaseException as exc:
            self._failed = True
            error = _as_loader_error(self.name, exc)
            if error is exc:
                raise
            raise error from exc
        return batch

    def step(self, _item: object = None) -> int:
        """One measured batch; returns the images it held."""
        begin = clock()
        batch = self.pull()
        waited = clock() - begin
        spent = self.compute.run() if self.compute is not None else 0.0
        self._steps += 1
        if self._steps == self.warmup_batches:
            self._cpu_start, self._cpu_clock = psutil.cpu_times(), clock()
            self._tree_cpu_start = _tree_cpu_s(self.loader.worker_pids())
            self._steady_from_s = self.sampler.now()
        images = self.count_images(batch)
        if self._steps > self.warmup_batches:
            self._latencies.append(waited)
            self._compute_s += spent
            self._wall_s += clock() - begin
            self._images += images
            self._stages.add(batch[2], batch[3])
        return images

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            if not self._failed and self._iterator is not None:
                self._epoch_start()
            self._seen_pids.update(self.loader.worker_pids())
            self._summarise()
        finally:
            self.extra.update(self.sampler.stop(self._steady_from_s))
            try:
                self.loader.close()
                pipeline = getattr(self.loader, "pipeline", None)
                if pipeline is not None and hasattr(pipeline, "close"):
                    pipeline.close()
            finally:
                pids = sorted(self._seen_pids | set(self.loader.worker_pids()))
                self.extra["worker_pids"] = pids
                alive = _alive(pids)  # the loader's own shutdown should have ended them all
                self.extra["workers_alive_after_close"] = alive
                self.extra["workers_left_after_reap"] = reap(alive) if alive else []

    def _epoch_start(self) -> None:
        measure = getattr(self.loader, "epoch_start_s", None)
        if measure is None:
            return
        try:
            with deadline(self.first_batch_timeout_s, f"{self.name}: new epoch"):
                self.extra["epoch_start_s"] = measure()
        except Exception as exc:  # recorded, not fatal: the timed rounds are done
            self.extra["epoch_start_error"] = one_line(exc)

    def _summarise(self) -> None:
        if self._images and self._wall_s > 0:
            # images over wall time across every batch after warm-up: what a bursty loader
            # sustains, beside the harness's median of rounds
            self.extra["steady_images_per_s"] = self._images / self._wall_s
        if self._latencies:
            ms = np.asarray(self._latencies) * 1e3
            self.extra["batch_latency_ms"] = {
                f"p{p}": float(np.percentile(ms, p)) for p in (50, 95, 99)
            }
        if self._cpu_start is not None:
            end = psutil.cpu_times()
            busy = sum(
                getattr(end, f) - getattr(self._cpu_start, f)
                for f in ("user", "system", "nice", "irq", "softirq")
            )
            total = sum(end) - sum(self._cpu_start)
            elapsed = clock() - self._cpu_clock
            ours = _tree_cpu_s(self.loader.worker_pids()) - self._tree_cpu_start
            self.extra["cpu_percent"] = 100.0 * busy / total if total > 0 else None
            self.extra["cpu_cores_busy"] = busy / elapsed
            # cores other processes kept busy meanwhile: high values mean a noisy measurement
            self.extra["background_cores_busy"] = max(0.0, (busy - ours) / elapsed)
        if self.compute is not None:
            self.extra["compute_s_per_batch"] = self.compute.seconds
            self.extra["compute_kind"] = self.compute.kind
            self.extra["au"] = accelerator_utilisation(self._compute_s, self._wall_s)
        stages = stage_extra(self._stages, self._wall_s - self._compute_s, self.parallel)
        if self.compute is not None:  # the loader works during the step: no efficiency to tell
            stages.pop("parallel_efficiency", None)
            stages.pop("wall_s_per_image", None)
        self.extra.update(stages)
        self.extra.update(getattr(self.loader, "extra", None) or {})  # what the loader recorded
        outside = getattr(self.loader, "stage_times", None)  # a loader that times them itself
        if "stage_times_s" not in self.extra and outside:
            self.extra["stage_times_s"] = dict(outside)
            self.extra["stage_times_method"] = (
                "the pipeline's functions run eagerly over the pool, outside the timed rounds"
            )


def _tree_cpu_s(worker_pids: list[int]) -> float:
    """CPU seconds used so far by this process and the given workers."""
    total = 0.0
    for proc in [psutil.Process(), *(_process(pid) for pid in worker_pids)]:
        if proc is None:
            continue
        try:
            times = proc.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += times.user + times.system
    return total


def _process(pid: int) -> psutil.Process | None:
    try:
        return psutil.Process(pid)
    except psutil.NoSuchProcess:
        return None


def _alive(pids: list[int]) -> list[int]:
    alive = []
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                alive.append(pid)
        except psutil.NoSuchProcess:
            continue
    return alive


def _as_loader_error(name: str, exc: BaseException) -> BaseException:
    if not isinstance(exc, Exception):
        return exc  # KeyboardInterrupt and friends pass through
    if isinstance(exc, LoaderError):
        return exc if str(exc).startswith(name) else LoaderError(f"{name}: {exc}")
    return LoaderError(f"{name}: {one_line(exc)}")
