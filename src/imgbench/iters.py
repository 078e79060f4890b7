"""Iteration helpers the standard library of Python 3.11 lacks (``itertools.batched`` is 3.12)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any


def batched(items: Iterable[Any], size: int) -> Iterator[list[Any]]:
    batch: list[Any] = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch
