"""Which loader configurations the final re-measures: the pick, the best row of each system
within the screen's plausible range, then the leaner plausible ties (those the secondary rule
would pick), the rest of the answer's equivalent set and the next few past them (at most two rows
of one system, the pick and the two fastest excepted), and the common default at 0 workers and at as many as
cores (the speed-ups' base)."""

from __future__ import annotations

from dataclasses import dataclass, field

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
# A system's rows past its best are ties of one choice: at most this many rows of one system
# (the pick and the two fastest rows the final can run always enter), so that the places go to
# the best of each system first (a make bench's final of ten held five DALI variants, no SPDL row)
MAX_VARIANTS = 2
EQUIVALENT, LEAN, NEXT, BEST_OF = "equivalent", "lean", "next", "best of"


@dataclass(frozen=True)
class Candidate:
    """One matrix row the final re-measures, and why it was chosen."""

    case_id: str
    why: str  # "equivalent" | "best of <system>" | "lean" | "next" | "common default at N workers"
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


def system_of(measured: Measured) -> str:
    """The system a user picks for ``measured`` (DALI, SPDL, DataLoader, ...): its row's
    ``system`` column, else its library (rows written before the column)."""
    return measured.system or measured.configuration.loader


def best_of_each_system(candidates: list[Measured]) -> dict[str, list[Measured]]:
    """Per system with a plausible tie (``plausible_ties``), its plausible rows fastest first;
    systems in the order of their fastest row. A system whose best row is outside the plausible
    range has none: no final would make it the pick."""
    systems: dict[str, list[Measured]] = {}
    for m in sorted(plausible_ties(candidates), key=lambda m: -m.images_per_s):
        systems.setdefault(system_of(m), []).append(m)
    return systems


def _proposed(answer: Answer, environment: dict[str, str]) -> list[tuple[str, Measured]]:
    """Every row the final could take, in order of preference, with why (see ``choose``)."""
    assert answer.best is not None
    best = answer.best
    # the pick first (the secondary rule may have chosen a slower member of the set); then each
    # system's best plausible row (a faster one of another environment is listed as left out,
    # and the system's next row in this one takes its slot)
    proposed: list[tuple[str, Measured]] = [(EQUIVALENT, best)]
    for system, rows in best_of_each_system(answer.candidates).items():
        for m in rows:
            proposed.append((f"{BEST_OF} {system}", m))
            if environment.get(m.case_id, MAIN) == MAIN:
                break
    # then the leaner plausible ties (the secondary rule's likely picks: room may run out before
    # the end of a large set), then the rest of the set, then the rows past it (the common
    # defaults come last, as the speed-ups' base, in their own places)
    equivalent = [best, *(m for m in answer.equivalent if m is not best)]
    lean = [m for m in leaner_plausible_ties(answer.candidates) if m is not best]
    proposed += [(EQUIVALENT if m in equivalent else LEAN, m) for m in lean]
    proposed += [(EQUIVALENT, m) for m in equivalent if m is not best and m not in lean]
    defaults = (answer.default_0, answer.default_cores)
    past = [m for m in answer.candidates if m not in equivalent and m not in lean]
    proposed += [(NEXT, m) for m in past if not any(m is d for d in defaults)]
    return proposed


@dataclass
class _Places:
    """The final's places as they fill: who took one, who was left out, rows per system."""

    environment: dict[str, str]
    always: set[str]  # case ids the variant cap never turns away
    chosen: list[Candidate] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)
    variants: dict[str, int] = field(default_factory=dict)

    def offer(self, why: str, measured: Measured, capped: bool = True) -> bool:
        """Give ``measured`` a place unless it has one, runs in another environment (then it
        is listed as left out) or its system has ``MAX_VARIANTS`` rows (when ``capped``)."""
        case_id = measured.case_id
        if case_id in self.seen:
            return False
        env = self.environment.get(case_id, MAIN)
        system = system_of(measured)
        full = self.variants.get(system, 0) >= MAX_VARIANTS
        if env == MAIN and capped and full and case_id not in self.always:
            return False
        self.seen.add(case_id)
        if env != MAIN:
            self.left_out.append(f"{case_id}: runs in the {env} environment (matrix figure kept)")
            return False
        if capped:
            self.variants[system] = self.variants.get(system, 0) + 1
        self.chosen.append(Candidate(case_id, why, measured.images_per_s))
        return True


def choose(frame: pd.DataFrame, plan: FinalPlan) -> Selection:
    """The candidates of the first answer in ``frame`` (one run's main-session rows).

    In order, as far as ``plan.max_candidates`` allows (the common defaults' places kept): the
    pick; the best row of each system within the screen's plausible range (``best of <system>``),
    fastest system first; then the leaner plausible ties, the rest of the equivalent set and the
    next ``plan.next_few``; then the common default at 0 workers and at as many as cores. No
    system gets more than ``MAX_VARIANTS`` rows before the defaults, except that the pick and the
    two fastest rows it can run always enter: a real make bench's final of ten held five DALI
    variants and no SPDL, torchdata.nodes or tf.data row (docs/final.md).

    Rows of another environment (pillow-simd, TensorFlow) run in their own interpreter and
    cannot share the final's process tree: they are listed as left out, not measured, and take
    no place (the system's best row in the main environment takes its slot).
    """
    found = answers(frame)
    answer = next((a for a in found if a.best is not None), None)
    if answer is None or answer.best is None:
        return Selection([], None, [])
    environment = _environment(frame)
    defaults = [
        (f"common default at {d.configuration.workers} workers", d)
        for d in (answer.default_0, answer.default_cores)
        if d is not None
    ]
    # the two fastest rows the final can run: the likeliest winners, whatever their system
    here = [m for m in answer.candidates if environment.get(m.case_id, MAIN) == MAIN]
    fastest = sorted(here, key=lambda m: -m.images_per_s)[:2]
    places = _Places(environment, {answer.best.case_id, *(m.case_id for m in fastest)})
    room = max(plan.max_candidates - len(defaults), 1)
    next_taken = 0
    for why, measured in _proposed(answer, environment):
        if len(places.chosen) >= room or (why == NEXT and next_taken >= plan.next_few):
            break
        next_taken += places.offer(why, measured) and why == NEXT
    for why, measured in defaults:  # the speed-ups' base, whatever its system's count
        places.offer(why, measured, capped=False)
    return Selection(places.chosen, answer, places.left_out)
