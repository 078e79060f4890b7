"""One way to turn an exception into the one-line reason a row, a skip or a command shows."""

from __future__ import annotations


def one_line(exc: BaseException, limit: int = 1000) -> str:
    """``Type: first line`` of an error; for errors re-raised from a worker, the original too.

    torch re-raises a worker's exception as "Caught ValueError in DataLoader worker process 0."
    followed by the worker's traceback, whose last line is the error itself.
    """
    lines = [line for line in str(exc).strip().splitlines() if line.strip()]
    if not lines:
        return type(exc).__name__
    head = f"{type(exc).__name__}: {lines[0].strip()}"
    if len(lines) > 1 and lines[0].startswith("Caught "):
        head += f" -> {lines[-1].strip()}"
    return head[:limit]
