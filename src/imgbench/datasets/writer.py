"""Files written by a thread of their own, so a generator worker encodes while a write waits.

Creating a file on ext4 mostly costs CPU (0.4 ms for a 110 KB JPEG here), but now and then it
sleeps: on a journal commit, or on write-back when another job writes (4-5 ms measured, 10x the
encode). The sleeps are not the generator's work; a writer thread per worker hides them behind
the next images' compose and encode (``os.open`` and ``os.write`` release the GIL). The queue
is bounded, so memory stays a few encoded images per worker, and a failed write is raised in
the worker at its next ``put`` or at ``drain``: nothing is lost silently.
"""

from __future__ import annotations

import os
import queue
import threading
from pathlib import Path
from types import TracebackType

DEPTH = 16  # encoded images queued per worker (~2 MB of 500x375 JPEGs; 16 large ones ~30 MB)


def write_file(path: Path, data: bytes) -> None:
    """Create ``path`` with ``data``: three system calls, no Python file object."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
    try:
        view = memoryview(data)
        while view:  # os.write may write less than asked
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


class BackgroundWriter:
    """``put(path, data)`` returns at once; a thread writes in order; ``drain()`` waits for it."""

    def __init__(self, depth: int = DEPTH) -> None:
        self._queue: queue.Queue[tuple[Path, bytes] | None] = queue.Queue(maxsize=depth)
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="imgbench-writer", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            try:
                if item is None:
                    return
                if self._error is None:  # after a failure, queued writes are dropped
                    write_file(*item)
            except BaseException as exc:  # raised in the worker, at its next put or drain
                self._error = exc
            finally:
                self._queue.task_done()

    def _raise(self) -> None:
        if self._error is not None:
            error, self._error = self._error, None
            raise error

    def put(self, path: Path, data: bytes) -> None:
        """Queue one file (waits while the queue is full); raises an earlier write's error."""
        self._raise()
        self._queue.put((path, data))

    def drain(self) -> None:
        """Wait until every queued file is written; raises the first write's error."""
        self._queue.join()
        self._raise()

    def close(self) -> None:
        """Stop the thread (queued files are written first)."""
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join()

    def __enter__(self) -> BackgroundWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            if exc_type is None:
                self.drain()
        finally:
            self.close()
