"""One candidate's figure, with what identifies its row: every number the answer gives is
traceable to a row, and carries its 95% interval."""

from __future__ import annotations

from dataclasses import dataclass

from imgbench.answer.intervals import Interval
from imgbench.answer.rows import Configuration

MATRIX, FINAL = "matrix", "final"  # where a figure comes from: the stage's matrix or the final


@dataclass(frozen=True)
class Measured:
    """One row's figure, with what identifies the row: every number is traceable."""

    configuration: Configuration
    images_per_s: float
    case_id: str
    run_id: str
    memory_bytes: float | None  # peak summed PSS of the loader's processes (RSS when absent)
    interval: Interval | None = None  # 95%, rounds widened by the between-session spread
    rounds: int = 0  # timed rounds behind the figure
    source: str = MATRIX  # MATRIX or FINAL (the head-to-head re-measurement)
    processes: int = 1  # processes the loader ran (main + worker processes)
    extra_dependencies: tuple[str, ...] = ()  # distributions beyond torch, torchvision, Pillow
    params: tuple[tuple[str, str], ...] = ()  # the row's params_json, for telling rows apart
    matrix_case_id: str | None = None  # a final row's matrix row
    # the system a user picks, whatever its variant (DALI, SPDL, DataLoader, ...): the row's
    # ``system`` column, else its library (results written before the column)
    system: str = ""

    def cite(self) -> str:
        return f"{self.case_id} in run {self.run_id}"

    def figure(self) -> str:
        """``610 images/s (95% interval 580-640)``, or the bare median without an interval."""
        if self.interval is None:
            return f"{self.images_per_s:,.0f} images/s"
        return self.interval.text()


def distinct_labels(candidates: list[Measured]) -> list[str]:
    """A chart label per candidate that no other candidate shares: the configuration's short
    label, then the parameters that differ among those that share it, then the case id."""
    labels = [m.configuration.short_label() for m in candidates]
    for label in set(labels):
        same = [i for i, text in enumerate(labels) if text == label]
        if len(same) < 2:
            continue
        params = [dict(candidates[i].params) for i in same]
        keys = sorted({k for p in params for k in p})
        differing = [k for k in keys if len({p.get(k) for p in params}) > 1]
        for i, p in zip(same, params, strict=True):
            extra = ", ".join(f"{k}={p.get(k, '-')}" for k in differing)
            labels[i] = f"{label} · {extra}" if extra else label
    counts: dict[str, int] = {}
    for text in labels:
        counts[text] = counts.get(text, 0) + 1
    return [
        f"{text} · {m.case_id}" if counts[text] > 1 else text
        for text, m in zip(labels, candidates, strict=True)
    ]
