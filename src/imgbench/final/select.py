"""Which loader configurations the final re-measures: the answer's equivalent set, the next few
past it, and the common default at 0 workers and at as many as cores (the speed-ups' base)."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from imgbench.answer import Answer, answers
from imgbench.answer.recommend import Measured
from imgbench.final.plan import FinalPlan

MAIN = "main"  # the final runs in the runner's environment; other environments' rows stay matrix


@dataclass(frozen=True)
class Candidate:
    """One matrix row the final re-measures, and why it was chosen."""

    case_id: str
    why: str  # "equivalent" | "next" | "common default at N workers"
    images_per_s: float  # the matrix's figure


@dataclass(frozen=True)
class Selection:
    candidates: list[Candidate]
    answer: Answer | None
    left_out: list[str]  # one line per candidate that could not run here, with the reason


def _environment(frame: pd.DataFrame) -> dict[str, str]:
    env = frame.get("environment")
    if env is None:
        return {}
    return dict(zip(frame["case_id"].astype(str), env.fillna(MAIN).astype(str), strict=True))


def choose(frame: pd.DataFrame, plan: FinalPlan) -> Selection:
    """The candidates of the first answer in ``frame`` (one run's main-session rows).

    Rows of another environment (pillow-simd, AlbumentationsX) run in their own interpreter and
    cannot share the final's process tree: they are listed as left out, not measured.
    """
    found = answers(frame)
    answer = next((a for a in found if a.best is not None), None)
    if answer is None or answer.best is None:
        return Selection([], None, [])
    environment = _environment(frame)
    # the pick first (the secondary rule may have chosen a slower member of the set), then the
    # rest of the set, fastest first
    best = answer.best
    equivalent = [best, *(m for m in answer.equivalent if m is not best)]
    ranked: list[tuple[str, Measured]] = [("equivalent", m) for m in equivalent]
    rest = [c for c in answer.candidates if c not in equivalent]
    ranked += [("next", m) for m in rest[: plan.next_few]]
    defaults = [
        (f"common default at {d.configuration.workers} workers", d)
        for d in (answer.default_0, answer.default_cores)
        if d is not None
    ]
    chosen: list[Candidate] = []
    left_out: list[str] = []
    room = max(plan.max_candidates - len(defaults), 1)
    for why, measured in [*ranked[:room], *defaults]:
        case_id = measured.case_id
        if any(c.case_id == case_id for c in chosen):
            continue
        env = environment.get(case_id, MAIN)
        if env != MAIN:
            left_out.append(f"{case_id}: runs in the {env} environment (matrix figure kept)")
            continue
        chosen.append(Candidate(case_id, why, measured.images_per_s))
    return Selection(chosen, answer, left_out)
