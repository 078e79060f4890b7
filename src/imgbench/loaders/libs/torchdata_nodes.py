"""``torchdata.nodes`` (torchdata 0.11), built as its docs show PyTorch users:

    SamplerWrapper(RandomSampler) -> ParallelMapper(map_fn=sample, num_workers=N,
    method="thread" | "process") -> Batcher(drop_last=True) -> Mapper(collate)
    [-> PinMemory, only where CUDA is] -> Prefetcher -> Loader

The sample function and the collate are the pipeline's (``imgbench.loaders.pipeline``), as for
every loader. ``method`` comes from the case's parameters: "thread" runs the samples on threads
of this process (parallel only where the libraries release the GIL), "process" on worker
processes that send each sample back through a ``multiprocessing.Queue`` (pickled; torch
tensors through shared memory). 0 workers is torchdata's inline ``Mapper``. Batching and the
collate run on the Prefetcher's thread.

``close`` stops every node's threads and processes: torchdata has no close of its own (its
iterators shut down when garbage-collected), and a process worker still flushing a sample into
its output pipe cannot exit until someone reads it, so the output queue is drained meanwhile;
what is still alive after that is reaped.
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from imgbench.loaders.base import Batch, clock, reap
from imgbench.loaders.documented import Documented, documented_counts
from imgbench.loaders.libs.torch_dataloader import ENDLESS, pin_worker_threads
from imgbench.loaders.pipeline import SamplePipeline, collate_for
from imgbench.unix_sockets import check_tensor_handover

if TYPE_CHECKING:
    from imgbench.loaders.plan import LoaderPlan
    from imgbench.measure.case import Case

METHODS = ("thread", "process")
PER_SAMPLE = "per-sample"  # ParallelMapper(sample) > Batcher > Mapper(collate): same recipe's
BATCH_MAP = "batch-map"  # Batcher > ParallelMapper(map and collate): its ImageNet example's
DOCUMENTED = Documented(
    source="pytorch/data examples/nodes/imagenet_benchmark.py, setup() (SamplerWrapper > "
    "Batcher > ParallelMapper(MapAndCollate) > Prefetcher(2) > Loader); torchdata 0.11",
    params={"torchdata_shape": BATCH_MAP},
)
STOP_WAIT_S = 5.0  # how long close() waits for the workers to see the stop event


class Sample:
    """``map_fn``: one sample of the pipeline; pins OpenCV to one thread once per process (what
    the DataLoader's ``worker_init_fn`` does), so parallelism comes from the workers."""

    def __init__(self, pipeline: SamplePipeline) -> None:
        self.pipeline = pipeline
        self._pinned_pid = -1

    def __call__(self, index: int) -> Any:
        import os

        if self._pinned_pid != os.getpid():
            pin_worker_threads(0)
            self._pinned_pid = os.getpid()
        return self.pipeline[index]


class MapAndCollate:
    """``map_fn`` of the batch-map shape: a batch of indices -> the collated batch, in one task
    (the example's ``MapAndCollate``)."""

    def __init__(self, sample: Sample, collate: Any) -> None:
        self.sample, self.collate = sample, collate

    def __call__(self, indices: list[int]) -> Any:
        return self.collate([self.sample(i) for i in indices])


class TorchdataNodesLoader:
    def __init__(self, pipeline: SamplePipeline, params: Mapping[str, Any], seed: int = 0) -> None:
        method = str(params.get("method") or "thread")
        if method not in METHODS:
            raise ValueError(f"torchdata.nodes method {method!r}: choose one of {METHODS}")
        self.pipeline = pipeline
        self.method = method
        self.workers = int(params.get("workers") or 0)
        self.batch_size = int(params["batch_size"])
        self.shape = str(params.get("torchdata_shape") or PER_SAMPLE)
        if self.shape not in (PER_SAMPLE, BATCH_MAP):
            raise ValueError(f"torchdata_shape {self.shape!r}: {PER_SAMPLE} or {BATCH_MAP}")
        # the example prefetches 2 batches; the per-sample shape one window per worker
        factor = int(params.get("prefetch_factor") or 2)
        self.prefetch = factor if self.shape == BATCH_MAP else max(1, self.workers) * factor
        self.seed = seed
        self._mapper: Any = None
        self._loader: Any = None
        self._pids: list[int] = []
        self._threads_before: set[threading.Thread] = set()
        self.survivors: list[int] = []
        self.extra: dict[str, Any] = {}

    def _build(self) -> Any:
        import torch
        import torchdata.nodes as tn
        from torch.utils.data import RandomSampler

        if self.method == "process" and self.workers:
            check_tensor_handover()  # else a long TMPDIR loses every sample (unix_sockets.py)
        generator = torch.Generator().manual_seed(self.seed)
        sampler = RandomSampler(self.pipeline, num_samples=ENDLESS, generator=generator)
        node: Any = tn.SamplerWrapper(sampler)
        collate = collate_for(self.pipeline.config)
        if self.shape == BATCH_MAP:  # its ImageNet example: batch the indices, map whole batches
            node = tn.Batcher(node, batch_size=self.batch_size, drop_last=True)
            self._mapper = tn.ParallelMapper(
                node,
                map_fn=MapAndCollate(Sample(self.pipeline), collate),
                num_workers=self.workers,
                method=self.method,
            )
            node = self._mapper
        else:
            self._mapper = tn.ParallelMapper(
                node, map_fn=Sample(self.pipeline), num_workers=self.workers, method=self.method
            )
            node = tn.Batcher(self._mapper, batch_size=self.batch_size, drop_last=True)
            node = tn.Mapper(node, map_fn=collate)
        pin = torch.cuda.is_available()
        if pin:
            node = tn.PinMemory(node)
        node = tn.Prefetcher(node, prefetch_factor=self.prefetch)
        self.extra = {
            "torchdata_method": self.method,
            "torchdata_nodes": (
                "SamplerWrapper > Batcher > ParallelMapper(map and collate) > "
                if self.shape == BATCH_MAP
                else "SamplerWrapper > ParallelMapper > Batcher > Mapper(collate) > "
            )
            + ("PinMemory > " if pin else "")
            + "Prefetcher > Loader",
            "torchdata_shape": self.shape,
            "torchdata_prefetch_factor": self.prefetch,
            "torchdata_max_concurrent": 2 * self.workers or None,  # ParallelMapper's default
            "pin_memory": pin,
        }
        if self.method == "process" and self.workers:
            import torch.multiprocessing as mp

            self.extra["torchdata_start_method"] = mp.get_start_method()
        return tn.Loader(node)

    def batches(self) -> Iterator[Batch]:
        self.pipeline.build()  # import the libraries once, before threads or forks
        self._threads_before = set(threading.enumerate())
        self._loader = self._build()
        iterator = iter(self._loader)
        self._pids = self._live_pids()
        return iterator

    def _mapper_iter(self) -> Any:
        """torchdata's running ``_ParallelMapperIter`` (None inline or before start)."""
        impl = getattr(self._mapper, "_it", None)
        return getattr(impl, "_it", None)

    def _live_pids(self) -> list[int]:
        workers = getattr(self._mapper_iter(), "_workers", None) or []
        return [w.pid for w in workers if getattr(w, "pid", None) is not None]

    def worker_pids(self) -> list[int]:
        return self._live_pids() or list(self._pids)

    def close(self) -> None:
        pids = sorted(set(self._pids) | set(self._live_pids()))
        mapper, loader = self._mapper_iter(), self._loader
        self._mapper = self._loader = None
        end = clock() + STOP_WAIT_S
        if mapper is not None:
            _stop_mapper(mapper, end)
        for node in _nodes(loader):  # Prefetcher, PinMemory: stop their threads
            shutdown = getattr(getattr(node, "_it", None), "_shutdown", None)
            if shutdown is not None:
                with contextlib.suppress(Exception):
                    shutdown()
        self.survivors = reap(pids)  # a worker stuck in a sample: ended here
        for thread in _our_threads(self._threads_before):
            thread.join(timeout=max(0.0, end - clock()))


def _stop_mapper(mapper: Any, end: float) -> None:
    """Set the mapper's stop events, then drain its output queue until every worker (thread or
    process) has left: a process blocked flushing a sample into the queue's pipe exits only
    once it is read. Then close the process queues (their feeder threads end)."""
    for name in ("_stop", "_mp_stop"):
        event = getattr(mapper, name, None)
        if event is not None:
            event.set()
    workers = list(getattr(mapper, "_workers", None) or [])
    out = getattr(mapper, "_intermed_q", None)
    while any(w.is_alive() for w in workers) and clock() < end:
        with contextlib.suppress(queue.Empty, OSError, EOFError, ValueError):
            while out is not None:
                out.get(timeout=0.02)
        for w in workers:
            w.join(timeout=0.02)
    with contextlib.suppress(Exception):
        mapper._shutdown()  # joins torchdata's reader and sort threads
    for name in ("_in_q", "_intermed_q"):
        q: Any = getattr(mapper, name, None)
        if hasattr(q, "cancel_join_thread"):  # a multiprocessing queue
            q.cancel_join_thread()
            q.close()


def _our_threads(before: set[threading.Thread]) -> list[threading.Thread]:
    """Threads started since ``before`` by torchdata's nodes or a multiprocessing queue."""
    ours = []
    for thread in threading.enumerate():
        target = getattr(thread, "_target", None)
        module = getattr(target, "__module__", "") or ""
        if thread not in before and module.startswith(("torchdata", "multiprocessing")):
            ours.append(thread)
    return ours


def _nodes(loader: Any) -> list[Any]:
    """The nodes from the loader's root down to its source."""
    nodes: list[Any] = []
    node = getattr(loader, "root", None)
    while node is not None and len(nodes) < 16:
        nodes.append(node)
        node = getattr(node, "source", None)
    return nodes


def build(pipeline: SamplePipeline, params: Mapping[str, Any]) -> TorchdataNodesLoader:
    return TorchdataNodesLoader(pipeline, params)


def documented_cases(plan: LoaderPlan) -> list[Case]:
    """torchdata.nodes as its ImageNet example builds it: threads over the thread sweep and
    processes at the sweep's workers (each method as the same-recipe rows run it)."""
    from imgbench.loaders.cases import loader_case
    from imgbench.loaders.registry import get_loader, pipeline_config

    entry = get_loader("torchdata-nodes")
    runs = [("thread", t) for t in documented_counts(plan.thread_sweep)]
    runs += [("process", plan.au_workers)]
    return [
        loader_case(
            entry.library,
            w,
            plan=plan,
            config=pipeline_config(name),
            method=method,
            documented=DOCUMENTED,
        )
        for name in entry.pipelines
        for method, w in runs
    ]
