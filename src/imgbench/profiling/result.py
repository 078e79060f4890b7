"""What ``imgbench profile`` found: each measured configuration, and the run as a whole.

Apart from the sweep that measures them, so the advice (which reads a result) and the sweep
(which calls the advice) do not import each other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from imgbench.loaders.au import AU_PASS
from imgbench.measure.rounds import Measurement


@dataclass
class Configuration:
    """One measured (or failed) worker count."""

    workers: int
    user_setting: bool
    status: str
    reason: str | None
    images_per_s: float | None
    extra: dict[str, Any] = field(default_factory=dict)
    row: dict[str, Any] = field(default_factory=dict)
    measurement: Measurement | None = None


@dataclass
class ProfileResult:
    target: str
    configurations: list[Configuration]
    results_path: Path
    flame_graph: Path | None
    step_ms: float
    advice: list[str] = field(default_factory=list)
    unit: str = "workers"  # what the sweep varies: DataLoader workers, or tf.data threads
    step: str | None = None  # the user's step (MODULE:FUNC) as the consumer, else a sleep

    @property
    def step_label(self) -> str:
        """The consumer the AU is measured with, as the advice names it."""
        return f"your step {self.step}" if self.step else f"a {self.step_ms:g} ms step"

    @property
    def fewest_workers_at_au(self) -> int | None:
        """The fewest workers whose AU at ``step_ms`` was 90% or more."""
        passing = [
            c.workers
            for c in self.configurations
            if c.status == "ok" and (c.extra.get("au") or 0) >= AU_PASS
        ]
        return min(passing) if passing else None
