"""The dataset tools' process pool: ordered, bounded, and a worker that dies is an error naming
what it was doing, never a hang."""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from imgbench.datasets.parallel import WorkerPool, imap

REPO = Path(__file__).resolve().parents[2]


def _square(x: int) -> int:
    return x * x


def _die_on_13(x: int) -> int:
    if x == 13:
        os.kill(os.getpid(), signal.SIGKILL)  # as the OOM killer would
    return x


def test_results_come_back_in_order_on_every_core() -> None:
    assert list(imap(_square, range(100), workers=2, chunksize=3)) == [x * x for x in range(100)]
    assert list(imap(_square, range(10), workers=1)) == [x * x for x in range(10)]


def test_items_are_taken_a_few_chunks_ahead_of_the_results() -> None:
    taken = itertools.count()

    def items() -> Iterator[int]:
        for x in range(10_000):
            next(taken)
            yield x

    with WorkerPool(2) as pool:
        results = pool.imap(_square, items(), chunksize=4)
        assert next(results) == 0
        ahead = next(taken)
        assert ahead <= 2 * 4 * 4 + 4  # four chunks per worker, and the next one
        assert list(results)[-1] == 9_999**2


def test_a_worker_that_dies_stops_the_map_with_an_error_naming_its_chunk() -> None:
    """In a child process with a deadline: ``multiprocessing.Pool`` waited here forever."""
    code = (
        "from imgbench.datasets.parallel import WorkerDiedError, imap\n"
        "from tests.datasets.test_parallel import _die_on_13\n"
        "try:\n"
        "    list(imap(_die_on_13, range(40), workers=2, chunksize=4))\n"
        "except WorkerDiedError as exc:\n"
        "    print('died:', exc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "died: a worker process died while running _die_on_13" in done.stdout
    # the chunk of 12..15 held 13; the pool fails every unfinished chunk and names none
    listed = done.stdout.split("starting at ", 1)[1].split(":", 1)[0].split(" and ")[0]
    starts = listed.split(", ")
    assert "12" in starts, done.stdout
    assert all(int(start) % 4 == 0 for start in starts), done.stdout
