"""Pipelines that go wrong: a sample that raises, a worker that hangs, a worker that dies, a
factory that raises."""

from __future__ import annotations

import os
import time
from typing import Any

import numpy as np


class Numbers:
    def __init__(self, n: int = 8, bad: int | None = None) -> None:
        self.n, self.bad = n, bad

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> Any:
        if index == self.bad:
            raise ValueError(f"cannot read sample {index}")
        return np.full((3, 8, 8), index, dtype=np.uint8)


class HangsInWorkers(Numbers):
    def __getitem__(self, index: int) -> Any:
        from torch.utils.data import get_worker_info

        if get_worker_info() is not None:
            time.sleep(600)  # a worker stuck on a network mount
        return super().__getitem__(index)


class DiesInWorkers(Numbers):
    def __getitem__(self, index: int) -> Any:
        from torch.utils.data import get_worker_info

        if get_worker_info() is not None:
            os._exit(3)  # a worker killed by a segfault or the OOM killer
        return super().__getitem__(index)


def raises_on_3() -> Numbers:
    return Numbers(bad=3)


def hangs_in_workers() -> Numbers:
    return HangsInWorkers()


def dies_in_workers() -> Numbers:
    return DiesInWorkers()


def broken_factory(root: str = "/nowhere") -> Numbers:
    raise FileNotFoundError(f"no images under {root}")


def not_a_dataset() -> int:
    return 42
