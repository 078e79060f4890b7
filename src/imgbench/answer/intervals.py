"""The 95% interval of a row's images/s, and of a ratio of two rows (a speed-up, a tie test).

One implementation for the answer, the report and the dashboard's bars. A row's interval comes
from its timed rounds (``images_per_round / samples_s``: a distribution-free interval of the
median) and, because one session's rounds see one draw of the host's state, is widened by the
spread the project measured for that kind of case between sessions (``RUN_TO_RUN_CV``). Where a
case has several runs in the rows, their own spread replaces the table's. Rows of the head-to-head
final are widened as loader rows are: their interleaved rounds share the host's states between the
candidates, but one final is one session (docs/dashboard.md, "The answer's intervals").
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

Z95 = 1.96
# The session-to-session coefficient of variation of a case's images/s, by stage and kind, as
# measured on this project's reference VM (quick profile, lab/stability.py, identical sessions):
# docs/measuring.md "How steady the figures are here" (lab/stability.py at d3fdd1f): the median
# case moved 1.5-2.35% between sessions in quiet hours (p95 9.4-10.4%); reader and augmentation
# cases agree within 2.4%; the loaders with workers and the format writes make the p95 (5-10%);
# the DataLoader at 2 workers read CV 2.3% with 1 s of rounds and 6.2% with five 20 ms rounds.
RUN_TO_RUN_CV: dict[tuple[str, str], float] = {
    ("loader", "workers"): 0.05,  # a loader with worker processes or threads: 5-10% measured
    ("loader", "no workers"): 0.02,  # the main process alone: the median case, 1.5-2.35%
    ("read", "any"): 0.02,  # decoders: within 2.4% between sessions
    ("augment", "any"): 0.02,  # augmentation on in-memory arrays: within 2.4% (quiet hour)
    ("format", "any"): 0.05,  # format writes 5-9%, byte reads 4.1-7.5%
}
DEFAULT_CV = 0.05  # any other stage: the loaders' figure, the conservative one
MIN_RUNS_FOR_OWN_SPREAD = 3  # a case's own runs replace the table from three runs on


def run_to_run_cv(stage: str, workers: int) -> float:
    """The measured between-session spread for a case of ``stage`` (see ``RUN_TO_RUN_CV``)."""
    # a final's rows are loader cases measured in one session: interleaving evens the host's
    # states out between its candidates, not the session's own draw (four finals' picks agreed in
    # 2 of 4 unwidened, 4 of 4 widened; docs/final.md, lab/repeatability.py at 420cd3a)
    if stage in ("loader", "final"):
        return RUN_TO_RUN_CV[("loader", "workers" if workers > 0 else "no workers")]
    return RUN_TO_RUN_CV.get((stage, "any"), DEFAULT_CV)


def round_throughputs(row: Mapping[str, Any] | pd.Series) -> np.ndarray:
    """Images/s of every timed round of one row (empty if the row has no samples)."""
    samples = row.get("samples_s")
    images = row.get("images_per_round")
    if samples is None or images is None or pd.isna(images):
        return np.empty(0)
    times = np.asarray(samples, dtype=float)
    times = times[np.isfinite(times) & (times > 0)]
    return float(images) / times


def median_ci(values: np.ndarray) -> tuple[float, float, float]:
    """Median and a distribution-free 95% interval (order statistics around n/2)."""
    values = np.sort(values[np.isfinite(values)])
    n = values.size
    if n == 0:
        return (math.nan, math.nan, math.nan)
    half = Z95 * math.sqrt(n) / 2
    lo = max(math.floor(n / 2 - half), 1)
    hi = min(math.ceil(n / 2 + half), n)
    return float(np.median(values)), float(values[lo - 1]), float(values[hi - 1])


@dataclass(frozen=True)
class Interval:
    """A figure and its 95% interval; ``widened_by`` is the between-session CV folded in."""

    value: float
    low: float
    high: float
    widened_by: float = 0.0

    def text(self, unit: str = "images/s") -> str:
        """``610 images/s (95% interval 580-640)``."""
        return f"{self.value:,.0f} {unit} (95% interval {self.low:,.0f}-{self.high:,.0f})"

    def short(self) -> str:
        """``610 (580-640)``: a metric tile's value."""
        return f"{self.value:,.0f} ({self.low:,.0f}-{self.high:,.0f})"

    @property
    def log_below(self) -> float:
        return math.log(self.value / self.low) if self.low > 0 else math.inf

    @property
    def log_above(self) -> float:
        return math.log(self.high / self.value) if self.value > 0 else math.inf


@dataclass(frozen=True)
class Ratio:
    """``a / b`` with its 95% interval (a speed-up)."""

    factor: float
    low: float
    high: float

    def text(self) -> str:
        """``4.5x (95% interval 4.1-4.9x)``."""
        return f"{self.factor:.1f}x (95% interval {self.low:.1f}-{self.high:.1f}x)"

    def short(self) -> str:
        """``4.5x (4.1-4.9x)``: a metric tile's value."""
        return f"{self.factor:.1f}x ({self.low:.1f}-{self.high:.1f}x)"

    @property
    def supported(self) -> bool:
        """The interval leaves out 1: the measurements support a difference."""
        return self.low > 1.0 or self.high < 1.0


def widen(value: float, low: float, high: float, cv: float) -> Interval:
    """Fold a between-session CV into an interval from one session's rounds: on the log scale,
    each side's half-width and ``1.96 * cv`` add in quadrature (independent sources of spread)."""
    if cv <= 0 or value <= 0:
        return Interval(value, low, high, 0.0)
    extra = (Z95 * cv) ** 2
    below = math.log(value / low) if low > 0 else 0.0
    above = math.log(high / value) if high > 0 else 0.0
    return Interval(
        value,
        value * math.exp(-math.sqrt(below**2 + extra)),
        value * math.exp(math.sqrt(above**2 + extra)),
        cv,
    )


def own_cv(medians: Sequence[float]) -> float | None:
    """A case's own between-run CV (of the log medians), from ``MIN_RUNS_FOR_OWN_SPREAD`` runs."""
    logs = np.log([m for m in medians if m > 0])
    if logs.size < MIN_RUNS_FOR_OWN_SPREAD:
        return None
    return float(np.std(logs, ddof=1))


def row_interval(
    row: Mapping[str, Any] | pd.Series, cv: float, median: float | None = None
) -> Interval:
    """The row's images/s (its stored median unless ``median`` is given) with its rounds'
    interval widened by ``cv``; a row without rounds gets the CV alone around its median."""
    stored = float(row["images_per_s_median"]) if median is None else median
    values = round_throughputs(row)
    _, low, high = median_ci(values)
    if not (math.isfinite(low) and math.isfinite(high)) or values.size < 2:
        low = high = stored
    return widen(stored, min(low, stored), max(high, stored), cv)


def ratio(a: Interval, b: Interval) -> Ratio | None:
    """``a / b`` with an interval: each side's log half-widths add in quadrature."""
    if b.value <= 0 or a.value <= 0:
        return None
    factor = a.value / b.value
    below = math.sqrt(a.log_below**2 + b.log_above**2)
    above = math.sqrt(a.log_above**2 + b.log_below**2)
    return Ratio(factor, factor * math.exp(-below), factor * math.exp(above))
