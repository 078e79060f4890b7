"""A user's ``tf.data.Dataset`` as a loader of the loader stage, swept over its thread pool.

tf.data has no worker processes: its map functions run as graphs on a pool of C++ threads in
the one process. Users tune that pool, so it is the sweep's "workers" dimension here:
``tf.data.Options().threading.private_threadpool_size`` set to 1..cores (the pool every
``AUTOTUNE`` or numeric ``num_parallel_calls`` of the pipeline draws from, and so the bound of
its parallelism), plus the pipeline's own options as it came (marked "yours"; 0 there means
TensorFlow's default, the shared inter-op pool of all cores). Nothing else of the pipeline is
changed: its map, batch and prefetch settings are the user's.

py-spy cannot attribute this: the map functions' work is in TensorFlow's C++ threads, with no
Python frames to name a library, so the rows carry :data:`ATTRIBUTION_REASON` instead of shares.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from imgbench.loaders.base import Batch

SETTING = "tf.data.Options().threading.private_threadpool_size"
ATTRIBUTION_REASON = (
    "not attributed: tf.data runs its map functions as graphs in TensorFlow's C++ threads, "
    "where py-spy sees no Python frames to name a library by"
)


def is_tf_dataset(obj: Any) -> bool:
    """A ``tf.data.Dataset``, told without importing TensorFlow (it may not be installed)."""
    return any(
        cls.__name__ == "DatasetV2" and cls.__module__.startswith("tensorflow")
        for cls in type(obj).__mro__
    )


def own_threads(dataset: Any) -> int:
    """The pipeline's own private thread pool size; 0 is TensorFlow's default (shared pool)."""
    return int(dataset.options().threading.private_threadpool_size or 0)


def thread_counts(
    dataset: Any, chosen: tuple[int, ...] | None, cores: int
) -> tuple[list[int], int]:
    """Pool sizes to measure (``chosen``, else 1..cores) and the pipeline's own."""
    own = own_threads(dataset)
    counts = set(chosen) if chosen is not None else set(range(1, cores + 1))
    counts.add(own)
    return sorted(counts), own


class TfDataUserLoader:
    """``batches()`` yields ``(user_batch, None, None, None)`` endlessly: the user's dataset with
    its thread pool set to ``threads`` (0: left as it came), restarted at each epoch's end."""

    def __init__(self, dataset: Any, threads: int, own: int) -> None:
        import tensorflow as tf

        self.workers = threads
        if threads != own:
            options = tf.data.Options()
            options.threading.private_threadpool_size = threads
            dataset = dataset.with_options(options)
        self.dataset = dataset
        self.batch_size = _batch_size(dataset)
        self.start_method = None
        self.epochs = 0

    def batches(self) -> Iterator[Batch]:
        import tensorflow as tf

        while True:
            empty = True
            try:
                for batch in self.dataset:
                    empty = False
                    yield batch, None, None, None
            except tf.errors.OpError as exc:  # an element's op raised inside the graph
                raise ElementError(f"a tf.data element raised {_op_error(exc)}") from None
            self.epochs += 1
            if empty:
                raise RuntimeError("the tf.data pipeline yields no batch (an empty dataset?)")

    def worker_pids(self) -> list[int]:
        return []  # threads of this process: the memory sampler reads the process itself

    def close(self) -> None:
        self.dataset = None


class ElementError(RuntimeError):
    """An op of the user's pipeline raised on an element; the message is TensorFlow's."""


def _op_error(exc: Any) -> str:
    """``InvalidArgumentError: Unknown image file format...`` without TensorFlow's
    ``{{function_node ...}}`` prefix."""
    message = re.sub(r"\{\{[^}]*\}\}\s*", "", str(getattr(exc, "message", exc)))
    return f"{type(exc).__name__}: {message.strip()}"


def _batch_size(dataset: Any) -> int:
    """The leading size of the pipeline's first element spec (its batch size), else 1."""
    import tensorflow as tf

    spec = tf.nest.flatten(dataset.element_spec)
    shape = spec[0].shape if spec and hasattr(spec[0], "shape") else None
    if shape is not None and shape.rank and shape[0] is not None:
        return int(shape[0])
    return 1


def tf_version() -> str | None:
    import tensorflow as tf

    return str(tf.__version__)
