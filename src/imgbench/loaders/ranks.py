"""R training ranks' loaders at once, sharing the machine's cores, as a multi-GPU box runs them.

``torchrun`` starts one process per GPU; each builds its own loader over its
``DistributedSampler`` shard (no two ranks draw the same sample in an epoch, seed 001) with its
own workers, and every step of distributed data parallel waits for all ranks (the gradients'
all-reduce). Here each rank is a forked process that builds the case's loader with ``rank`` and
``ranks`` in its parameters (the loader shards by them and says so: ``shard``), and the
measuring process is the all-reduce: one timed step asks every rank for its next batch and waits
for all of them. A step holds ``ranks x batch_size`` images.

A rank forces each batch to a contiguous tensor, as its training step would, and sends back only
the batch's size and stage times (a real rank hands its batch to its own GPU, not to a peer);
its first batch travels whole, and each rank's first batch is checked before any timing.
Everything a rank started (its loader's workers) stops with it; ``close`` reaps what remains.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np

from imgbench.errors import one_line
from imgbench.loaders.base import BATCH_TIMEOUT_S, Batch, Loader, LoaderError, reap
from imgbench.loaders.pipeline import force

NEXT, STOP = "next", "stop"


class RanksLoader:
    """``ranks`` loaders, one per rank process; a batch is one step of every rank."""

    def __init__(
        self,
        build: Callable[[Mapping[str, Any]], Loader],
        params: Mapping[str, Any],
        ranks: int,
        check: Callable[[Batch], str | None] | None = None,
        timeout_s: float = BATCH_TIMEOUT_S,
    ) -> None:
        if ranks < 1:
            raise ValueError(f"ranks {ranks}: at least 1")
        self.build, self.params, self.ranks = build, dict(params), ranks
        self.check, self.timeout_s = check, timeout_s
        self._processes: list[Any] = []
        self._connections: list[Any] = []
        self._worker_pids: list[int] = []
        self.extra: dict[str, Any] = {"ranks": ranks}

    def batches(self) -> Iterator[Batch]:
        context = multiprocessing.get_context("fork")
        for rank in range(self.ranks):
            ours, theirs = context.Pipe()
            params = {**self.params, "rank": rank, "ranks": self.ranks}
            process = context.Process(
                target=_rank_main,
                args=(self.build, params, theirs, self.check),
                name=f"imgbench-rank-{rank}",
            )
            process.start()
            theirs.close()
            self._processes.append(process)
            self._connections.append(ours)
        return self._steps()

    def _steps(self) -> Iterator[Batch]:
        firsts = self._exchange()
        problems = [(r, m[2]) for r, m in enumerate(firsts) if m[2]]
        if problems:
            rank, problem = problems[0]
            raise LoaderError(f"rank {rank}'s first batch check failed: {problem}")
        for message in firsts:
            self._worker_pids += message[3]
        yield _tensors(firsts[0][1])  # rank 0's first batch, whole: checked like any loader's
        while True:
            yield _step(self._exchange())

    def _exchange(self) -> list[Any]:
        """Ask every rank for its next batch, then wait for all: one all-reduce step."""
        for connection in self._connections:
            # a rank that already failed closed its end: its error is read below
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                connection.send(NEXT)
        messages = []
        for rank, connection in enumerate(self._connections):
            if not connection.poll(self.timeout_s):
                raise LoaderError(f"rank {rank}: no batch within {self.timeout_s:g} s")
            try:
                message = connection.recv()
            except (EOFError, ConnectionResetError):
                raise LoaderError(f"rank {rank} died without a word") from None
            if message[0] == "error":
                raise LoaderError(f"rank {rank}: {message[1]}")
            messages.append(message)
        return messages

    def worker_pids(self) -> list[int]:
        """The rank processes and their loaders' workers."""
        ranks = [p.pid for p in self._processes if p.pid is not None]
        return ranks + self._worker_pids

    def close(self) -> None:
        pids = self.worker_pids()
        for connection in self._connections:
            with contextlib.suppress(OSError, ValueError):
                connection.send(STOP)
        for process in self._processes:
            process.join(timeout=30)
        for connection in self._connections:
            connection.close()
        self._connections, self._processes = [], []
        reap(pids)


def _step(messages: list[Any]) -> Batch:
    """One step of every rank as one batch: no images (each stayed with its rank), a label per
    image, every image's stage times and the ranks' collate seconds."""
    images = sum(m[1] for m in messages)
    times = [m[2] for m in messages if m[2] is not None]
    stage_s = np.concatenate(times) if len(times) == len(messages) else None
    collate = [m[3] for m in messages if m[3] is not None]
    return None, np.zeros(images, dtype=np.int64), stage_s, sum(collate) if collate else None


def _rank_main(
    build: Callable[[Mapping[str, Any]], Loader],
    params: Mapping[str, Any],
    connection: Any,
    check: Callable[[Batch], str | None] | None,
) -> None:
    """One rank: build its loader, then one batch per request until told to stop."""
    loader: Loader | None = None
    try:
        loader = build(params)
        shard = getattr(loader, "shard", None)
        if shard != (params["rank"], params["ranks"]):
            raise LoaderError(f"{type(loader).__name__} does not shard its samples by rank")
        iterator = loader.batches()
        first = True
        while connection.recv() == NEXT:
            batch = next(iterator)
            force(batch)
            if first:
                problem = check(batch) if check is not None else None
                connection.send(("first", _plain(batch), problem, loader.worker_pids()))
                first = False
            else:
                connection.send(("batch", len(batch[1]), _array(batch[2]), _seconds(batch[3])))
    except (EOFError, KeyboardInterrupt):
        pass
    except BaseException as exc:
        with contextlib.suppress(OSError):
            connection.send(("error", one_line(exc)))
    finally:
        if loader is not None:
            with contextlib.suppress(Exception):
                loader.close()
        connection.close()
        os._exit(0)  # no atexit of the measuring process's in a forked rank


def _plain(batch: Batch) -> Batch:
    """A batch that pickles through a pipe as plain arrays (a tensor in a worker's shared memory
    would travel as a file descriptor); :func:`_tensors` rebuilds it."""
    images, labels, stage_s, collate_s = batch
    images = [_array(x) for x in images] if isinstance(images, list) else _array(images)
    return images, _array(labels), _array(stage_s), _seconds(collate_s)


def _tensors(batch: Batch) -> Batch:
    import torch

    images, labels, stage_s, collate_s = batch
    images = images if isinstance(images, list) else torch.from_numpy(images)
    return images, torch.from_numpy(labels), stage_s, collate_s


def _array(value: Any) -> np.ndarray | None:
    if value is None:
        return None
    return np.array(value.numpy() if hasattr(value, "numpy") else value)


def _seconds(value: Any) -> float | None:
    return None if value is None else float(value)
