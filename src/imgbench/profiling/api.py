"""The Python API behind ``imgbench.profile(...)``: keyword options in, a ProfileResult out."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from imgbench.profiling.result import ProfileResult
from imgbench.profiling.sweep import ProfileSettings
from imgbench.profiling.sweep import profile as sweep
from imgbench.profiling.target import is_dataset_or_loader


def profile(
    dataset_or_loader: Any,
    *,
    batch_size: int = 32,
    workers: Sequence[int] | None = None,
    seconds: float = 8.0,
    au_seconds: float | None = None,
    sample_seconds: float = 3.0,
    step_ms: float = 50.0,
    batch_timeout_s: float = 30.0,
    first_batch_timeout_s: float = 120.0,
    results: Path | str = "results",
    name: str | None = "profile",
    target: str | None = None,
    compare_readers: bool = True,
    step: Callable[[Any], Any] | None = None,
) -> ProfileResult:
    """Sweep worker counts (default 0..cores, plus a DataLoader's own) over the pipeline; for a
    tf.data.Dataset (TensorFlow environment), its private thread pool size (1..cores, plus its own);
    for a Keras PyDataset, ``workers`` (0, 1, cores) x ``use_multiprocessing`` (False, True).

    ``seconds`` bounds the throughput phase of each configuration, ``au_seconds`` (default
    ``seconds / 2``) the AU phase with a ``step_ms`` emulated step, ``sample_seconds`` the stack
    sampling (0: none). Rows go to ``results/RUN_ID.parquet`` as each configuration finishes;
    the flame graph to ``results/RUN_ID.speedscope.json``. ``compare_readers``: when decoding
    dominates, time the verified readers on a sample of the dataset's files for the advice.
    ``step``: your training step, called with each batch, as the AU phase's consumer instead of
    the ``step_ms`` sleep (its own rate on a cached batch too; ``imgbench.profiling.step``).
    """
    if not is_dataset_or_loader(dataset_or_loader):
        raise TypeError(
            f"imgbench.profile: {type(dataset_or_loader).__name__} is not a torch Dataset or "
            "DataLoader, nor a tf.data.Dataset, nor a Keras PyDataset"
        )
    settings = ProfileSettings(
        seconds=seconds,
        au_seconds=au_seconds,
        sample_seconds=sample_seconds,
        step_ms=step_ms,
        batch_size=batch_size,
        workers=tuple(workers) if workers is not None else None,
        batch_timeout_s=batch_timeout_s,
        first_batch_timeout_s=first_batch_timeout_s,
        compare_readers=compare_readers,
        step=step,
        step_target=None if step is None else getattr(step, "__qualname__", repr(step)),
    )
    return sweep(
        dataset_or_loader, target=target, settings=settings, results_dir=results, run_name=name
    )
