"""How much of a final a profile runs (``[tool.imgbench.profiles.NAME.final]``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from imgbench.plan import StagePlan


@dataclass(frozen=True, kw_only=True)
class FinalPlan(StagePlan):
    """Blocks of interleaved rounds over the matrix's best loader configurations.

    Each block measures every candidate once, in a fresh shuffled order, for ``rounds`` timed
    rounds in a fresh worker fork (as the matrix does); a candidate's figure pools its blocks.
    """

    stage: ClassVar[str] = "final"
    blocks: int = 5  # 0: no final
    rounds: int = 3  # timed rounds per candidate per block
    # candidates past the equivalent set: a screen of 5 rounds can rank a true winner a few places
    # down; the common default at 0 and at as many workers as cores always runs
    next_few: int = 3
    max_candidates: int = 10  # the defaults included
    seed: int = 0  # the shuffles' seed: the same rows give the same order
    # seconds of the machine reference timed before each block (imgbench.measure.reference;
    # about twice this with its warm-ups): the final's rows carry their median, so two machines'
    # picks are set against the host's speed of the same minutes; 0: the run's reference
    reference_s: float = 1.5
    # the shortest a final round may last (seconds; 0: the profile's min_round_s): a loader's
    # rounds of a few batches last 35 ms here, and three of them time one state of the host
    min_round_s: float = 0.0
