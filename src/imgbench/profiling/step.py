"""``imgbench profile --step MODULE:FUNC``: the user's own training step as the consumer of their
loader, instead of the emulated ``--step-ms`` sleep.

``FUNC(batch)`` is called once per batch, with the batch as the loader yields it (moving it to a
device is the step's own business, as in the user's training loop). Before the AU phase it runs
on one batch kept aside: once untimed (CUDA initialisation, cuDNN's kernel choice), then
``CACHED_STEPS`` times: the step's own images/s with no loader in the way. In the AU phase the
busy time is, where the step used CUDA, the GPU's: two CUDA events around each call, one step
kept in flight (the next batch is pulled before the previous step's end is waited for, as a
training loop does until it reads the loss), as the ``gpu`` rows measure it
(``imgbench.loaders.gpu.step.StepCompute``); elsewhere the call's wall time (a CPU step is
synchronous).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

from imgbench.profiling.target import TargetError, load_factory

CACHED_STEPS = 5  # timed calls on the cached batch, after one untimed
CACHED_MAX_S = 10.0  # ... or fewer, once they add up to this


def load_step(target: str) -> Callable[[Any], Any]:
    """``MODULE:FUNC`` -> the callable; one-line TargetError where it does not import or is not
    callable."""
    step = load_factory(target)
    if not callable(step):
        raise TargetError(f"--step {target}: {type(step).__name__} is not callable")
    return step


def cuda_in_use() -> bool:
    """The process initialised CUDA (the step put something on a GPU); torch not imported: no."""
    torch = sys.modules.get("torch")
    return bool(torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized())


class UserStep:
    """The user's step: ``cached_rate`` on one batch, then ``run`` per batch returning the busy
    seconds (on CUDA: the previous step's, from its events), ``finish`` the last one's."""

    def __init__(self, target: str, func: Callable[[Any], Any]) -> None:
        self.target = target
        self.func = func
        self.cuda = False
        self.seconds = 0.0  # one step on the cached batch
        self._pending: tuple[Any, Any] | None = None

    @property
    def kind(self) -> str:
        return f"user step {self.target}"

    @property
    def method(self) -> str:
        if self.cuda:
            return "CUDA events around each step, one in flight: busy time over wall time"
        return "the step's wall time (no CUDA: synchronous) over wall time"

    def _sync(self) -> None:
        if self.cuda:
            import torch

            torch.cuda.synchronize()

    def cached_rate(self, batch: Any, images: int) -> float:
        """The step's own images/s on ``batch`` called again and again (no loader, no new data)."""
        self.func(batch)
        self.cuda = cuda_in_use()
        self._sync()
        calls = 0
        start = time.perf_counter()
        while calls < CACHED_STEPS and (calls == 0 or time.perf_counter() - start < CACHED_MAX_S):
            self.func(batch)
            calls += 1
        self._sync()
        self.seconds = (time.perf_counter() - start) / calls
        return images / self.seconds

    def run(self, batch: Any) -> float:
        if not self.cuda:
            start = time.perf_counter()
            self.func(batch)
            return time.perf_counter() - start
        import torch

        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        begin.record()
        self.func(batch)
        end.record()
        busy = self.finish()
        self._pending = (begin, end)
        return busy

    def finish(self) -> float:
        """Wait for the step in flight; its busy seconds (0 where none is)."""
        if self._pending is None:
            return 0.0
        begin, end = self._pending
        self._pending = None
        end.synchronize()
        return float(begin.elapsed_time(end)) / 1e3
