"""An emulated training step and accelerator utilisation (AU), as MLPerf Storage defines them.

After each batch the loop spends ``compute_s`` on the "accelerator": ``sleep`` leaves the CPU to
the loader, as a GPU step does; ``busy`` spins one core, as a CPU-bound step does. AU is the
compute time over the wall time of the steps; MLPerf Storage passes a configuration at AU >= 90%.
A case's compute time comes from the accelerator speed it emulates: ``batch / images_per_s``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

AU_PASS = 0.90
COMPUTE_KINDS = ("sleep", "busy")


@dataclass(frozen=True)
class ComputeStep:
    seconds: float
    kind: str = "sleep"

    def __post_init__(self) -> None:
        if self.kind not in COMPUTE_KINDS:
            raise ValueError(f"compute kind {self.kind!r}: choose one of {COMPUTE_KINDS}")
        if self.seconds < 0:
            raise ValueError(f"compute time must be >= 0, got {self.seconds}")

    @classmethod
    def for_accelerator(
        cls, images_per_s: float, batch_size: int, kind: str = "sleep"
    ) -> ComputeStep:
        return cls(batch_size / images_per_s, kind)

    def run(self) -> float:
        """Spend the step's time; returns the seconds actually spent."""
        start = time.perf_counter()
        if self.kind == "sleep":
            time.sleep(self.seconds)
        else:
            end = start + self.seconds
            while time.perf_counter() < end:
                pass
        return time.perf_counter() - start


def accelerator_utilisation(compute_s: float, wall_s: float) -> float | None:
    return compute_s / wall_s if wall_s > 0 else None
