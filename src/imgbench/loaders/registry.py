"""Every loader imgbench measures. Adding one is a module with ``build(pipeline, params)`` that
returns a :class:`~imgbench.loaders.base.Loader`, plus an entry here."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType


@dataclass(frozen=True)
class LoaderSpec:
    library: str  # the row's library column
    module: str  # module with ``build(pipeline, params)``
    requires: tuple[str, ...]  # importable modules
    dist: str | None  # distribution whose version rows record (None: the standard library)
    processes: bool  # workers are processes (memory per worker is sampled) or threads
    environment: str = "main"
    note: str = ""
    # formats the loader writes and reads with its own library (it gets the dataset's files):
    # tf.data writes TFRecord with tf.io, whose protos clash with the tfrecord package's
    own_formats: tuple[str, ...] = ()
    # batches per worker in one timed round: 2 covers the bursts of N workers finishing together;
    # a loader that hands over many batches at once (Ray Data) needs longer rounds
    round_batches_per_worker: int = 2

    def load(self) -> ModuleType:
        return importlib.import_module(self.module)


_M = "imgbench.loaders."

LOADERS: tuple[LoaderSpec, ...] = (
    LoaderSpec("torch-dataloader", _M + "torch_dataloader", ("torch",), "torch", True),
    LoaderSpec(
        "sharded-iterable",
        _M + "sharded_iterable",
        ("torch",),
        "torch",
        True,
        note="IterableDataset: worker k streams samples k, k+n, ... of each pass",
    ),
    LoaderSpec(
        "threadpool",
        _M + "threads",
        ("torch",),
        None,
        False,
        note="multiprocessing.pool.ThreadPool, one batch per task",
    ),
    LoaderSpec(
        "queue-feeder",
        _M + "queue_feeder",
        ("torch",),
        None,
        False,
        note="threads put samples on a bounded queue.Queue; the main thread collates",
    ),
    LoaderSpec(
        "prefetch-generator",
        _M + "prefetch",
        ("torch", "prefetch_generator"),
        "prefetch_generator",
        False,
        note="BackgroundGenerator: one background thread",
    ),
    LoaderSpec(
        "ray-data",
        _M + "ray_data",
        ("ray.data", "torch"),
        "ray",
        True,
        note="ray.data on a local cluster (num_cpus = cores); the row that scales past one machine",
        round_batches_per_worker=8,  # it delivers 4-8 batches at once, then waits
    ),
    LoaderSpec(
        "tf-data",
        _M + "tfdata",
        ("tensorflow",),
        "tensorflow-cpu",
        False,
        environment="tensorflow",
        note="tf.data: map(num_parallel_calls=AUTOTUNE) + prefetch(AUTOTUNE)",
        own_formats=("tfrecord",),
    ),
    LoaderSpec(
        "keras-pydataset",
        _M + "keras",
        ("tensorflow", "keras"),
        "keras",
        True,
        environment="tensorflow",
        note="keras.utils.PyDataset(workers=N, use_multiprocessing=True)",
    ),
    LoaderSpec(
        "cow-experiment",
        _M + "cow",
        ("torch", "pyarrow"),
        "torch",
        True,
        note="pytorch issue 13246: the dataset index as list / numpy / pyarrow, forked workers",
    ),
)


def get_loader(library: str) -> LoaderSpec:
    for spec in LOADERS:
        if spec.library == library:
            return spec
    raise KeyError(f"unknown loader {library!r}; known: {[s.library for s in LOADERS]}")


# Loaders from the posts that cannot run on this stack: listed by `imgbench env`.
UNAVAILABLE: tuple[tuple[str, str], ...] = (
    (
        "keras.utils.Sequence + fit_generator(workers=N)",
        "fit_generator and Sequence workers were removed in Keras 3; measured as "
        "`keras-pydataset` (PyDataset with workers), their replacement",
    ),
    (
        "NVIDIA DALI",
        "needs a CUDA GPU for its decoders; none on this machine",
    ),
)
