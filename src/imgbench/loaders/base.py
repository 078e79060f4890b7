"""The loader stage's protocol: a loader turns a sample pipeline into an endless stream of batches.

A loader is what a training loop iterates: it owns its workers (processes or threads), hands
back one :data:`Batch` per ``next()``, and frees every worker on ``close()``. What one sample
goes through (format reader -> decoder -> augmentation -> collate) is defined once, in
``imgbench.loaders.pipeline``; loaders only decide where that work runs.

The stream never ends at an epoch boundary (samplers cycle through reshuffled epochs), so the
harness times the steady state; what an epoch restart costs is measured separately where the
loader has such a thing (``epoch_start_s``).
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Iterator
from typing import Any, Protocol

# A batch as every loader returns it:
#   (images: B x 3 x H x W float32 tensor, or a list of HxWx3 arrays for the pass-through pipeline,
#    labels: int64 tensor of B,
#    stage_s: B x 3 float64 tensor of per-image seconds in (read, decode, augment),
#    collate_s: seconds the collate of this batch took;
#    stage_s and collate_s are None from a loader that cannot time its parts, e.g. a tf.data graph)
Batch = tuple[Any, Any, Any, float | None]

FIRST_BATCH_TIMEOUT_S = 180.0  # worker start-up included: spawn re-imports torch in each worker
BATCH_TIMEOUT_S = 60.0


class LoaderError(RuntimeError):
    """A loader failed or hung; the message is one line naming the loader and the cause."""


class Loader(Protocol):
    def batches(self) -> Iterator[Batch]:
        """An endless iterator of batches; starting it starts the workers."""
        ...

    def worker_pids(self) -> list[int]:
        """Process ids of the loader's worker processes (empty for threads or none)."""
        ...

    def close(self) -> None:
        """Stop and reap every worker; safe to call twice and after a failure."""
        ...


@contextlib.contextmanager
def deadline(seconds: float, what: str) -> Iterator[None]:
    """Raise LoaderError if the block runs longer than ``seconds`` (main thread only).

    SIGALRM interrupts a main thread that waits on a queue, a lock or ``time.sleep``, so a hung
    worker or a hung dataset in the main process ends as an error instead of a stuck suite.
    Off the main thread (or without SIGALRM) the block simply runs; loaders pass their own
    timeouts to the waits they make.
    """
    if seconds <= 0 or threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_alarm(signum: int, frame: Any) -> None:
        raise LoaderError(f"{what}: no batch within {seconds:g} s (a worker hung or died)")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def reap(pids: list[int], grace_s: float = 5.0) -> list[int]:
    """Make sure the given worker processes are gone: terminate, then kill. Returns survivors."""
    import psutil

    procs = []
    for pid in pids:
        with contextlib.suppress(psutil.NoSuchProcess):
            proc = psutil.Process(pid)
            if proc.status() != psutil.STATUS_ZOMBIE:
                procs.append(proc)
    for proc in procs:
        with contextlib.suppress(psutil.NoSuchProcess):
            proc.terminate()
    _, alive = psutil.wait_procs(procs, timeout=grace_s)
    for proc in alive:
        with contextlib.suppress(psutil.NoSuchProcess):
            proc.kill()
    _, alive = psutil.wait_procs(alive, timeout=grace_s)  # also reaps our own children
    return [p.pid for p in alive]


def clock() -> float:
    return time.perf_counter()
