"""Which loader configurations the final re-measures: the answer's equivalent set, the leaner
plausible ties (those the secondary rule would pick), the next few past them, and the common
default at 0 workers and at as many as cores (the speed-ups' base)."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from imgbench.answer import Answer, answers
from imgbench.answer.recommend import Measured
from imgbench.answer.ties import MEMORY_TIE
from imgbench.final.plan import FinalPlan

# Five finals of the default profile tied candidates up to 16% below the fastest (625 against 744
# images/s), and a 5-round screen row moved up to 10% from its final figure: a screen row within 25%
# of the fastest may still tie in a final
PLAUSIBLE_SHORTFALL = 0.25
MAIN = "main"  # the final runs in the runner's environment; other environments' rows stay matrix


@dataclass(frozen=True)
class Candidate:
    """One matrix row the final re-measures, and why it was chosen."""

    case_id: str
    why: str  # "equivalent" | "lean" | "next" | "common default at N workers"
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


def plausible_ties(candidates: list[Measured]) -> list[Measured]:
    """The screen's rows a final could still tie with the fastest: their 95% interval overlaps
    the fastest's, or their median is within ``PLAUSIBLE_SHORTFALL`` of it."""
    fastest = max(candidates, key=lambda m: m.images_per_s, default=None)
    if fastest is None:
        return []
    floor = fastest.images_per_s * (1 - PLAUSIBLE_SHORTFALL)
    low = fastest.interval.low if fastest.interval is not None else fastest.images_per_s
    return [
        m
        for m in candidates
        if m.images_per_s >= floor or m.interval is None or m.interval.high >= low
    ]


def leaner_plausible_ties(candidates: list[Measured]) -> list[Measured]:
    """The plausible ties the secondary rule would pick if the final tied them (within
    ``MEMORY_TIE`` of the least memory among them, or the fewest processes), fastest first.

    Without them the pick moved between runs with the screen's order: five runs of the default
    profile held the thread pool at 2 threads and the queue feeder (415-430 MB, one process) in
    the final in only some runs, and whichever was there won the memory rule (docs/final.md).
    """
    plausible = plausible_ties(candidates)
    memories = [float(m.memory_bytes) for m in plausible if m.memory_bytes is not None]
    least = min(memories, default=None)
    fewest = min((m.processes for m in plausible), default=None)
    lean = [
        m
        for m in plausible
        if m.processes == fewest
        or (
            least is not None
            and m.memory_bytes is not None
            and float(m.memory_bytes) <= least * (1 + MEMORY_TIE)
        )
    ]
    return sorted(lean, key=lambda m: -m.images_per_s)


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
    # then the leaner plausible ties (the secondary rule's likely picks: room may run out before
    # the end of a large set), then the rest of the set, then the next few past it
    equivalent = [best, *(m for m in answer.equivalent if m is not best)]
    lean = [m for m in leaner_plausible_ties(answer.candidates) if m is not best]
    ranked: list[tuple[str, Measured]] = [("equivalent", best)]
    ranked += [("equivalent" if m in equivalent else "lean", m) for m in lean]
    ranked += [("equivalent", m) for m in equivalent if m is not best and m not in lean]
    rest = [c for c in answer.candidates if c not in equivalent and c not in lean]
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
