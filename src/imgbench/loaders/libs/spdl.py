"""SPDL (Meta's thread-based data loading): ``spdl.pipeline.PipelineBuilder`` over imgbench's
sample pipeline, in this process's threads or run in one subprocess.

The recipe, in SPDL's API (``workers`` = N threads)::

    PipelineBuilder()
      .add_source(Indices(n))                   # reshuffled epochs of sample indices, no end
      .pipe(sample, concurrency=N)              # read -> decode -> augment, N at once
      .aggregate(batch_size, drop_last=True)
      .pipe(collate)                            # the same collate as every loader
      .add_sink(prefetch_factor)
      .build(num_threads=N)                     # spdl-subprocess: run_pipeline_in_subprocess

``sample`` runs in SPDL's thread pool, so the threads run in parallel only where the decoder and
augmentation release the GIL. The decoder is the pipeline's (``default``: OpenCV; ``spdl-io``:
``spdl.io``'s FFmpeg decode, ``imgbench.readers.libs.spdl``). ``spdl-subprocess`` runs the same
pipeline with ``run_pipeline_in_subprocess`` (one process, forked by multiprocessing's default
start method, N threads inside; batches come back pickled, tensors through shared memory), the
pattern SPDL's docs recommend when the training loop's own threads compete for the GIL.

A sample that fails (a truncated JPEG, a zero-byte file) does not raise inside SPDL, which by
default would log it and drop it: it comes back as a :class:`SampleFailure` naming its file,
and the batch holding it fails the row with that name. ``close`` stops the pipeline (its event
loop, source thread and pool) or the subprocess, and reaps what is left of it.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from imgbench.errors import one_line
from imgbench.loaders.base import (
    BATCH_TIMEOUT_S,
    FIRST_BATCH_TIMEOUT_S,
    Batch,
    LoaderError,
    reap,
)
from imgbench.loaders.documented import Documented, documented_counts
from imgbench.loaders.pipeline import SamplePipeline, collate_for

if TYPE_CHECKING:
    from imgbench.loaders.plan import LoaderPlan
    from imgbench.measure.case import Case

STOP_TIMEOUT_S = 10.0  # how long close() waits for the pipeline's threads
# a stage that raises stops the pipeline (SPDL's default, -1, logs and drops the item, which
# would show as a hang); samples never raise here (SampleFailure), so this is the collate's
MAX_FAILURES = 0
PER_SAMPLE = "per-sample"  # pipe(sample, concurrency=N) -> aggregate -> collate (same recipe)
PER_BATCH = "per-batch"  # aggregate -> pipe(batch, concurrency=N): SPDL's own examples' shape
DOCUMENTED = Documented(
    source="facebookresearch/spdl examples/imagenet_classification.py (aggregate, then one "
    "decode task per batch, concurrency set per stage); spdl 0.8",
    params={"spdl_shape": PER_BATCH},
)


@dataclass(frozen=True)
class SampleFailure:
    """A sample whose read, decode or augmentation raised: which one, and why."""

    index: int
    name: str  # its file, or where it came from
    reason: str

    def describe(self) -> str:
        return f"{self.name}: {self.reason}"


@dataclass(frozen=True)
class FailedBatch:
    """What the collate stage returns instead of a batch holding failed samples."""

    failures: tuple[SampleFailure, ...]

    def describe(self) -> str:
        shown = "; ".join(f.describe() for f in self.failures[:3])
        more = len(self.failures) - 3
        return shown + (f"; and {more} more" if more > 0 else "")


class Indices:
    """Sample indices of reshuffled epochs without end (an iterable SPDL can re-iterate and
    pickle into its subprocess)."""

    def __init__(self, n: int, seed: int = 0) -> None:
        self.n, self.seed = n, seed

    def __iter__(self) -> Iterator[int]:
        rng = np.random.default_rng(self.seed)
        while True:
            yield from rng.permutation(self.n).tolist()


def sample_name(source: Any, index: int) -> str:
    """The file behind a sample, for error messages (a format's record number otherwise)."""
    paths = getattr(source, "paths", None)
    if paths is not None:
        with contextlib.suppress(Exception):
            return os.fsdecode(paths[index])
    return f"{getattr(source, 'name', 'sample')} record {index}"


class Sample:
    """``pipeline[index]`` on an SPDL thread; the pipeline's libraries are built once per process
    (in the subprocess too), with OpenCV and torch pinned to one thread each: the threads are the
    parallelism, as DataLoader workers pin themselves."""

    def __init__(self, pipeline: SamplePipeline) -> None:
        self.pipeline = pipeline
        self._lock = threading.Lock()
        self._ready = -1  # the process the pipeline was built in

    def __getstate__(self) -> dict[str, Any]:
        return {"pipeline": self.pipeline}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["pipeline"])  # type: ignore[misc]

    def prepare(self) -> None:
        if self._ready == os.getpid():
            return
        with self._lock:
            if self._ready != os.getpid():
                self.pipeline.build()
                pin_threads()
                self._ready = os.getpid()

    def __call__(self, index: int) -> Any:
        self.prepare()
        try:
            return self.pipeline[index]
        except Exception as exc:
            return SampleFailure(index, sample_name(self.pipeline.source, index), one_line(exc))


def pin_threads() -> None:
    import sys

    cv2 = sys.modules.get("cv2")
    if cv2 is not None:
        cv2.setNumThreads(1)
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(1)


class Collate:
    """The pipeline's collate, unless a sample failed: then the failures, for the main side."""

    def __init__(self, collate: Callable[[list[Any]], Batch]) -> None:
        self.collate = collate

    def __call__(self, samples: list[Any]) -> Batch | FailedBatch:
        failures = tuple(s for s in samples if isinstance(s, SampleFailure))
        if failures:
            return FailedBatch(failures)
        return self.collate(samples)


class BatchTask:
    """One task per batch (the per-batch shape): every sample of the batch, then the collate, on
    one SPDL thread: one hand-off per batch instead of one per sample."""

    def __init__(self, sample: Sample, collate: Collate) -> None:
        self.sample, self.collate = sample, collate

    def __call__(self, indices: list[int]) -> Batch | FailedBatch:
        return self.collate([self.sample(i) for i in indices])


class SpdlLoader:
    def __init__(
        self, pipeline: SamplePipeline, params: Mapping[str, Any], *, subprocess: bool = False
    ) -> None:
        self.pipeline = pipeline
        self.subprocess = subprocess
        self.threads = max(1, int(params.get("workers") or 1))
        self.batch_size = int(params["batch_size"])
        self.buffer = int(params.get("prefetch_factor") or 2)
        self.timeout = float(params.get("batch_timeout_s") or BATCH_TIMEOUT_S)
        self.first_timeout = max(FIRST_BATCH_TIMEOUT_S, 3 * self.timeout)
        self.sample = Sample(pipeline)
        self.shape = str(params.get("spdl_shape") or PER_SAMPLE)
        if self.shape not in (PER_SAMPLE, PER_BATCH):
            raise ValueError(f"spdl_shape {self.shape!r}: {PER_SAMPLE} or {PER_BATCH}")
        self._pipeline: Any = None  # spdl.pipeline.Pipeline, in this process
        self._iterable: Any = None  # run_pipeline_in_subprocess's iterable
        self._iterator: Iterator[Any] | None = None
        self._pids: list[int] = []
        self.extra: dict[str, Any] = {}

    def config(self) -> Any:
        from spdl.pipeline import PipelineBuilder

        builder = PipelineBuilder[int, Any]().add_source(Indices(len(self.pipeline)))
        collate = Collate(collate_for(self.pipeline.config))
        if self.shape == PER_BATCH:  # SPDL's ImageNet example: batch the indices, then one task
            builder = builder.aggregate(self.batch_size, drop_last=True).pipe(
                BatchTask(self.sample, collate), concurrency=self.threads, name="batch"
            )
        else:
            builder = (
                builder.pipe(self.sample, concurrency=self.threads, name="sample")
                .aggregate(self.batch_size, drop_last=True)
                .pipe(collate, name="collate")
            )
        return builder.add_sink(self.buffer).get_config()

    def batches(self) -> Iterator[Batch]:
        import multiprocessing

        from spdl.pipeline import build_pipeline, run_pipeline_in_subprocess

        self.extra = {
            "spdl_mode": "subprocess" if self.subprocess else "threads",
            "spdl_shape": self.shape,
            "spdl_concurrency": self.threads,
            "spdl_num_threads": self.threads,
            "spdl_sink_buffer": self.buffer,
        }
        if not self.subprocess:
            self.sample.prepare()  # import the libraries once, not racing in every thread
            self._pipeline = build_pipeline(
                self.config(), num_threads=self.threads, max_failures=MAX_FAILURES
            )
            self._pipeline.start(timeout=self.first_timeout)
            return self._unwrap(self._pipeline.get_iterator(timeout=self.timeout))
        self.extra["spdl_start_method"] = multiprocessing.get_start_method()
        before = _children()
        self._iterable = run_pipeline_in_subprocess(
            self.config(),
            num_threads=self.threads,
            max_failures=MAX_FAILURES,
            timeout=self.first_timeout,
        )
        self._pids = sorted(_children() - before)
        self._iterator = iter(self._iterable)
        return self._unwrap(self._iterator)

    def _unwrap(self, items: Iterable[Any]) -> Iterator[Batch]:
        try:
            for item in items:
                if isinstance(item, FailedBatch):
                    raise LoaderError(f"spdl: a batch held broken samples: {item.describe()}")
                yield item
        except TimeoutError:
            raise LoaderError(f"spdl: no batch within {self.timeout:g} s") from None
        raise LoaderError("spdl: the pipeline ended (its endless source stopped)")

    def worker_pids(self) -> list[int]:
        return list(self._pids)

    def close(self) -> None:
        pipeline, self._pipeline = self._pipeline, None
        if pipeline is not None:
            try:
                pipeline.stop(timeout=STOP_TIMEOUT_S)
            except Exception as exc:  # a task's failure, raised once by stop(): recorded
                self.extra["stop_error"] = one_line(exc)
        iterator, self._iterator = self._iterator, None
        if iterator is not None:
            with contextlib.suppress(Exception):
                iterator.close()  # type: ignore[attr-defined]
        iterable, self._iterable = self._iterable, None
        if iterable is not None:
            # spdl's own teardown (ABORT, drain, join; terminate and kill if it must): the
            # public path is garbage collection of the iterable, which runs the same finalizer
            shutdown = getattr(iterable, "_shutdown", None)
            with contextlib.suppress(Exception):
                if shutdown is not None:
                    shutdown()
            del iterable
        reap(self._pids)


def _children() -> set[int]:
    import psutil

    return {child.pid for child in psutil.Process().children()}


def build(pipeline: SamplePipeline, params: Mapping[str, Any]) -> SpdlLoader:
    return SpdlLoader(pipeline, params)


def build_subprocess(pipeline: SamplePipeline, params: Mapping[str, Any]) -> SpdlLoader:
    return SpdlLoader(pipeline, params, subprocess=True)


def documented_cases(plan: LoaderPlan) -> list[Case]:
    """SPDL as its own examples build it: per-batch tasks over the thread sweep, on the default
    pipeline. spdl.io's decode has no random crop to fold in (its ``load_image_batch`` resizes
    whole images), so it stays the per-sample rows' decoder choice."""
    from imgbench.loaders.cases import loader_case
    from imgbench.loaders.registry import get_loader

    entry = get_loader("spdl")
    return [
        loader_case(entry.library, t, plan=plan, documented=DOCUMENTED)
        for t in documented_counts(plan.thread_sweep)
    ]
