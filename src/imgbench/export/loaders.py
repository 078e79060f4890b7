"""The loader of an exported module: ``make_loader(root, batch_size, epochs=1)`` per loader kind,
built with the row's settings (written out as constants above it by ``imgbench.export.module``).

Each template is the imgbench adapter's construction (``imgbench.loaders.libs.<kind>``) as a user
writes it in a training script: the adapters' endless sampler (one iterator over reshuffled
epochs, so the harness times the steady state) becomes ``epochs`` reshuffled passes, and what
only a harness needs (worker pid tracking, deadlines, failure diagnosis) is left out.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LoaderCode:
    imports: tuple[str, ...]
    code: str  # defines ``make_loader``
    dataset: bool = True  # uses the shared ImageFolderDataset (DALI reads the files itself)


_DATALOADER = '''
class DataLoaderStoppedAtExit(DataLoader):
    """torch's DataLoader; an iterator still alive when the script ends has its worker processes
    stopped and joined by stop_running_loaders (by then torch's own shutdown, the iterator's
    __del__, is off, and multiprocessing would kill them with SIGTERM)."""

    def __iter__(self):
        iterator = super().__iter__()
        if self.num_workers:
            stop_at_exit(iterator, stop_workers)
        return iterator


def stop_workers(iterator) -> None:
    """What a DataLoader iterator's __del__ does: tell the workers to stop, join them and the
    pin-memory thread (torch has no public call for it)."""
    iterator._shutdown_workers()


def make_loader(root: str | Path, batch_size: int = BATCH_SIZE, epochs: int = 1) -> DataLoader:
    """torch.utils.data.DataLoader over the folder, with the row's workers and knobs."""
    dataset = ImageFolderDataset(root)
    sampler = RandomSampler(dataset, num_samples=epochs * len(dataset))  # reshuffled passes
    return DataLoaderStoppedAtExit(
        dataset,
        batch_size=batch_size,
        sampler=sampler,
        collate_fn=collate,
        num_workers=WORKERS,
        pin_memory=PIN_MEMORY,
        drop_last=True,
        **DATALOADER_WORKER_KWARGS,
    )
'''

_THREADPOOL = '''
def batch_indices(n: int, batch_size: int, epochs: int, seed: int = 0) -> list[list[int]]:
    """Index lists of ``epochs`` reshuffled passes; batches may span a pass boundary."""
    rng = np.random.default_rng(seed)
    order = [i for _ in range(epochs) for i in rng.permutation(n).tolist()]
    return [order[i : i + batch_size] for i in range(0, len(order) - batch_size + 1, batch_size)]


class ThreadPoolLoader:
    """multiprocessing.pool.ThreadPool, one whole batch (samples + collate) per task, a window
    of PREFETCH_FACTOR x threads batches in flight."""

    def __init__(self, dataset: ImageFolderDataset, batch_size: int, epochs: int) -> None:
        self.dataset, self.batch_size, self.epochs = dataset, batch_size, epochs

    def __len__(self) -> int:
        return self.epochs * len(self.dataset) // self.batch_size

    def _load(self, indices: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
        return collate([self.dataset[i] for i in indices])

    def __iter__(self) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        return stop_at_exit(self._batches())

    def _batches(self) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        prepare()  # build the recipe once, not racing in every thread
        window = WORKERS * PREFETCH_FACTOR
        pool = ThreadPool(WORKERS)
        try:
            inflight: deque = deque()
            for indices in batch_indices(len(self.dataset), self.batch_size, self.epochs):
                inflight.append(pool.apply_async(self._load, (indices,)))
                if len(inflight) >= window:
                    yield inflight.popleft().get()
            while inflight:
                yield inflight.popleft().get()
        finally:  # the pass ends, or the iterator is closed, dropped or stopped at exit
            # no new task; wait for the batches in flight: a thread still inside OpenCV's C++
            # code when the interpreter finalises aborts it ("terminate called without ...")
            pool.terminate()
            pool.join()


def make_loader(root: str | Path, batch_size: int = BATCH_SIZE, epochs: int = 1) -> ThreadPoolLoader:
    """A thread pool of WORKERS threads over the folder."""
    return ThreadPoolLoader(ImageFolderDataset(root), batch_size, epochs)
'''

_QUEUE_FEEDER = '''
class QueueFeeder:
    """WORKERS threads each take the next index, run the sample and put it on a bounded
    queue.Queue of PREFETCH_FACTOR x batch_size slots; the consuming thread collates."""

    def __init__(self, dataset: ImageFolderDataset, batch_size: int, epochs: int) -> None:
        self.dataset, self.batch_size, self.epochs = dataset, batch_size, epochs

    def __len__(self) -> int:
        return self.epochs * len(self.dataset) // self.batch_size

    def __iter__(self) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        return stop_at_exit(self._batches())

    def _batches(self) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        prepare()
        rng = np.random.default_rng(0)
        order = [i for _ in range(self.epochs) for i in rng.permutation(len(self.dataset))]
        order.reverse()  # pop() from the end
        lock, stop = threading.Lock(), threading.Event()
        samples: queue.Queue = queue.Queue(self.batch_size * PREFETCH_FACTOR)

        def feed() -> None:
            while not stop.is_set():
                with lock:
                    if not order:
                        return
                    index = int(order.pop())
                try:
                    item = (True, self.dataset[index])
                except Exception as exc:  # handed to the consumer, which raises it
                    item = (False, exc)
                while not stop.is_set():
                    try:
                        samples.put(item, timeout=0.1)
                        break
                    except queue.Full:
                        continue

        threads = [threading.Thread(target=feed, daemon=True) for _ in range(WORKERS)]
        for thread in threads:
            thread.start()
        try:
            for _ in range(len(self)):
                batch = []
                while len(batch) < self.batch_size:
                    ok, item = samples.get(timeout=60)
                    if not ok:
                        raise item
                    batch.append(item)
                yield collate(batch)
        finally:  # the pass ends, or the iterator is closed, dropped or stopped at exit
            stop.set()
            for thread in threads:  # each ends after its sample (a decode of milliseconds)
                thread.join()


def make_loader(root: str | Path, batch_size: int = BATCH_SIZE, epochs: int = 1) -> QueueFeeder:
    """A queue.Queue fed by WORKERS threads over the folder."""
    return QueueFeeder(ImageFolderDataset(root), batch_size, epochs)
'''

_TORCHDATA_NODES = '''
class Sample:
    """``map_fn``: one sample; pins OpenCV to one thread once per process, as the DataLoader's
    worker_init_fn does."""

    def __init__(self, dataset: ImageFolderDataset) -> None:
        self.dataset = dataset
        self._pinned = -1

    def __call__(self, index: int) -> tuple[object, int]:
        if self._pinned != os.getpid():
            pin_opencv()
            self._pinned = os.getpid()
        return self.dataset[index]


class MapAndCollate:
    """``map_fn`` of the batch-map shape: a batch of indices -> the collated batch, one task."""

    def __init__(self, sample: Sample) -> None:
        self.sample = sample

    def __call__(self, indices: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
        return collate([self.sample(i) for i in indices])


def make_loader(root: str | Path, batch_size: int = BATCH_SIZE, epochs: int = 1) -> tn.Loader:
    """torchdata.nodes: SamplerWrapper > ParallelMapper > Batcher > Mapper(collate) >
    [PinMemory where CUDA is] > Prefetcher > Loader; SHAPE "batch-map" (its ImageNet example):
    SamplerWrapper > Batcher > ParallelMapper(MapAndCollate) > [PinMemory] > Prefetcher(2)."""
    dataset = ImageFolderDataset(root)
    prepare()  # build the recipe once, before threads or forks
    sampler = RandomSampler(dataset, num_samples=epochs * len(dataset))
    node = tn.SamplerWrapper(sampler)
    if SHAPE == "batch-map":
        node = tn.Batcher(node, batch_size=batch_size, drop_last=True)
        map_fn = MapAndCollate(Sample(dataset))
        node = tn.ParallelMapper(node, map_fn=map_fn, num_workers=WORKERS, method=METHOD)
        prefetch = PREFETCH_FACTOR
    else:
        node = tn.ParallelMapper(node, map_fn=Sample(dataset), num_workers=WORKERS, method=METHOD)
        node = tn.Batcher(node, batch_size=batch_size, drop_last=True)
        node = tn.Mapper(node, map_fn=collate)
        prefetch = max(1, WORKERS) * PREFETCH_FACTOR
    if torch.cuda.is_available():
        node = tn.PinMemory(node)
    node = tn.Prefetcher(node, prefetch_factor=prefetch)
    return stop_at_exit(tn.Loader(node), stop_nodes)


def stop_nodes(loader: tn.Loader) -> None:
    """Stop the threads of the loader's nodes, from its last node to its sampler: what each
    node's running iterator does when it is garbage-collected (torchdata.nodes 0.11 has no
    public call for it: a node's ``_it`` is its running iterator, ``_shutdown()`` its stop)."""
    node = loader.root
    while node is not None:
        running = getattr(node, "_it", None)
        while running is not None and not hasattr(running, "_shutdown"):
            running = getattr(running, "_it", None)  # ParallelMapper: a node around its iterator
        if running is not None:
            running._shutdown()
        node = getattr(node, "source", None)
'''

_SPDL = '''
class Sample:
    """One sample on an SPDL thread; builds the recipe and pins OpenCV and torch to one thread
    once per process (the threads are the parallelism)."""

    def __init__(self, dataset: ImageFolderDataset) -> None:
        self.dataset = dataset
        self._ready = -1

    def __getstate__(self) -> dict:
        return {"dataset": self.dataset, "_ready": -1}

    def __call__(self, index: int) -> tuple[object, int]:
        if self._ready != os.getpid():
            prepare()
            pin_threads()
            self._ready = os.getpid()
        return self.dataset[index]


class BatchTask:
    """One task per batch (SHAPE "per-batch"): every sample of the batch, then the collate."""

    def __init__(self, sample: Sample) -> None:
        self.sample = sample

    def __call__(self, indices: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
        return collate([self.sample(i) for i in indices])


class SpdlLoader:
    """spdl.pipeline: source -> pipe(sample, concurrency=WORKERS) -> aggregate(batch_size) ->
    pipe(collate) -> sink(PREFETCH_FACTOR), built with num_threads=WORKERS (in this process,
    or in one subprocess with run_pipeline_in_subprocess when SUBPROCESS); SHAPE "per-batch":
    source -> aggregate(batch_size) -> pipe(BatchTask, concurrency=WORKERS) -> sink."""

    def __init__(self, dataset: ImageFolderDataset, batch_size: int, epochs: int) -> None:
        self.dataset, self.batch_size, self.epochs = dataset, batch_size, epochs

    def __len__(self) -> int:
        return self.epochs * len(self.dataset) // self.batch_size

    def _config(self):
        rng = np.random.default_rng(0)
        order = [i for _ in range(self.epochs) for i in rng.permutation(len(self.dataset)).tolist()]
        builder = PipelineBuilder().add_source(order)
        if SHAPE == "per-batch":  # SPDL's ImageNet example: aggregate, then one task per batch
            builder = builder.aggregate(self.batch_size, drop_last=True).pipe(
                BatchTask(Sample(self.dataset)), concurrency=WORKERS, name="batch"
            )
        else:
            builder = (
                builder.pipe(Sample(self.dataset), concurrency=WORKERS, name="sample")
                .aggregate(self.batch_size, drop_last=True)
                .pipe(collate, name="collate")
            )
        return builder.add_sink(PREFETCH_FACTOR).get_config()

    def __iter__(self) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        return stop_at_exit(self._batches())

    def _batches(self) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        if SUBPROCESS:
            yield from run_pipeline_in_subprocess(
                self._config(), num_threads=WORKERS, max_failures=0
            )
            return
        pipeline = build_pipeline(self._config(), num_threads=WORKERS, max_failures=0)
        with pipeline.auto_stop():
            yield from pipeline.get_iterator(timeout=60)


def make_loader(root: str | Path, batch_size: int = BATCH_SIZE, epochs: int = 1) -> SpdlLoader:
    """An SPDL pipeline over the folder."""
    return SpdlLoader(ImageFolderDataset(root), batch_size, epochs)
'''

_DALI = '''
class DaliLoader:
    """An NVIDIA DALI pipeline: fn.readers.file over the folder's files (random_shuffle) -> the
    train recipe's graph (``_recipe``) on DEVICE, WORKERS threads, PREFETCH_FACTOR batches
    prefetched; batches come out as torch tensors (copied out of DALI's buffers)."""

    def __init__(self, root: str | Path, batch_size: int, epochs: int) -> None:
        paths, labels, self.classes = list_images(root)
        self.n, self.batch_size, self.epochs = len(paths), batch_size, epochs
        self.pipe = Pipeline(
            batch_size=batch_size,
            num_threads=WORKERS,
            device_id=0 if DEVICE == "mixed" else None,
            prefetch_queue_depth=PREFETCH_FACTOR,
            seed=0,
        )
        with self.pipe:
            encoded, label = fn.readers.file(
                files=paths, labels=labels, random_shuffle=True, name="Reader"
            )
            self.pipe.set_outputs(_recipe(fn, types, encoded, DEVICE, DECODE), label)
        self.pipe.build()

    def __len__(self) -> int:
        return self.epochs * self.n // self.batch_size

    def __iter__(self) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        for _ in range(len(self)):
            images, labels = self.pipe.run()
            batch = to_torch_tensor(images.as_tensor(), copy=True)
            yield batch, to_torch_tensor(labels.as_tensor(), copy=True).reshape(-1).long()


def make_loader(root: str | Path, batch_size: int = BATCH_SIZE, epochs: int = 1) -> DaliLoader:
    """A DALI pipeline over the folder."""
    return DaliLoader(root, batch_size, epochs)
'''

_SAMPLER = "from torch.utils.data import DataLoader, RandomSampler"
LOADERS: dict[str, LoaderCode] = {
    "torch-dataloader": LoaderCode((_SAMPLER,), _DATALOADER),
    "threadpool": LoaderCode(
        (
            "from collections import deque",
            "from collections.abc import Iterator",
            "from multiprocessing.pool import ThreadPool",
        ),
        _THREADPOOL,
    ),
    "queue-feeder": LoaderCode(
        ("import queue", "import threading", "from collections.abc import Iterator"), _QUEUE_FEEDER
    ),
    "torchdata-nodes": LoaderCode(
        ("import torchdata.nodes as tn", "from torch.utils.data import RandomSampler"),
        _TORCHDATA_NODES,
    ),
    "spdl": LoaderCode(
        (
            "from collections.abc import Iterator",
            "from spdl.pipeline import PipelineBuilder, build_pipeline, run_pipeline_in_subprocess",
        ),
        _SPDL,
    ),
    "dali": LoaderCode(
        (
            "from collections.abc import Iterator",
            "from nvidia.dali import fn, types",
            "from nvidia.dali.pipeline import Pipeline",
            "from nvidia.dali.plugin.pytorch.torch_utils import to_torch_tensor",
        ),
        _DALI,
        dataset=False,
    ),
}
LOADERS["spdl-subprocess"] = LOADERS["spdl"]


def loader_code(library: str) -> LoaderCode:
    """The template of the loader ``library``; KeyError when there is none."""
    return LOADERS[library]
