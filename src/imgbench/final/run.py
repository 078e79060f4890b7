"""The final's measurement: blocks of one fork per candidate, in a fresh shuffled order each
block, from one worker server, so that the candidates share the host's states; a candidate's
row pools its blocks' rounds and keeps each block's figure."""

from __future__ import annotations

import dataclasses
import json
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from imgbench.final.plan import FinalPlan
from imgbench.final.select import Candidate
from imgbench.measure.case import Case
from imgbench.measure.manager import Manager, Skipped
from imgbench.measure.reference import (
    MachineReference,
    median_reference,
    safe_reference,
    turned_off,
)
from imgbench.measure.rounds import Measurement, pool
from imgbench.measure.rows import RunHeader, case_listing, case_row
from imgbench.measure.settings import Settings
from imgbench.profiles import Profile, ProfileChoice
from imgbench.stages import planner, profile_imports, worker_preload

STAGE = "final"
PREFIX = "final::"  # a final row's case_id: this prefix and the matrix row's case_id


def final_case_id(matrix_case_id: str) -> str:
    return PREFIX + matrix_case_id


@dataclass
class Contest:
    """What the final measured so far: each candidate's blocks, and why one dropped out."""

    candidates: list[Candidate]
    cases: dict[str, Case] = field(default_factory=dict)  # the planned case of each candidate
    parts: dict[str, list[Measurement]] = field(default_factory=dict)
    wall_s: dict[str, float] = field(default_factory=dict)
    # the machine reference timed before each block (imgbench.measure.reference): the final's
    # rows carry the median, taken in the same minutes as their rounds
    references: list[MachineReference] = field(default_factory=list)
    dropped: dict[str, str] = field(default_factory=dict)  # case_id -> status: reason
    orders: list[list[str]] = field(default_factory=list)  # each block's order (case ids)


def final_settings(settings: Settings, plan: FinalPlan) -> Settings:
    """The session's settings with the final's rounds, one process per block."""
    return dataclasses.replace(
        settings,
        rounds=plan.rounds,
        loader_rounds=0,
        processes=1,
        min_round_s=max(settings.min_round_s, plan.min_round_s),
    )


def measure_final(
    candidates: list[Candidate],
    choice: ProfileChoice,
    profile: Profile,
    dataset: str,
    settings: Settings,
    plan: FinalPlan,
    on_block: Callable[[Contest, Manager], None] | None = None,
    say: Callable[[str], None] = print,
) -> tuple[Contest, Manager]:
    """Measure the candidates in ``plan.blocks`` shuffled blocks. ``on_block`` runs after each
    block (the caller writes the rows so far: a stopped final loses at most one block). The
    manager is returned open for the rows' dataset; the caller closes it. ``profile`` is
    ``choice`` resolved."""
    plans = planner(choice, profile)
    planned = {c.case_id: c for c in plans.cases("loader", settings)}
    contest = Contest(candidates)
    for candidate in candidates:
        case = planned.get(candidate.case_id)
        if case is None:
            contest.dropped[candidate.case_id] = (
                "skipped: the profile no longer plans this case (the matrix ran another version)"
            )
        else:
            contest.cases[case.case_id] = case
    chosen = list(contest.cases.values())
    measuring = final_settings(settings, plan)
    if measuring.worker_imports == "profile":
        required = profile_imports(profile, "main")
    else:
        required = tuple({m for case in chosen for m in case.requires})
    manager = Manager(measuring, plans, dataset, preload=worker_preload(required))
    shuffle = random.Random(plan.seed)
    for block in range(plan.blocks):
        order = [c for c in chosen if c.case_id not in contest.dropped]
        if not order:
            break
        shuffle.shuffle(order)
        contest.orders.append([c.case_id for c in order])
        if plan.reference_s > 0 and not turned_off():  # the host's speed beside the rounds
            contest.references.append(safe_reference(plan.reference_s))
        for case in order:
            started = time.perf_counter()
            outcome = manager.measure(case)
            contest.wall_s[case.case_id] = contest.wall_s.get(case.case_id, 0.0) + (
                time.perf_counter() - started
            )
            if isinstance(outcome, Measurement):
                contest.parts.setdefault(case.case_id, []).append(outcome)
            else:
                status = "skipped" if isinstance(outcome, Skipped) else "failed"
                contest.dropped[case.case_id] = f"{status}: {outcome.reason}"
                say(f"final: {case.case_id} dropped in block {block + 1}: {outcome.reason}")
        say(f"final: block {block + 1}/{plan.blocks} measured ({len(order)} candidates)")
        if on_block is not None:
            on_block(contest, manager)
    return contest, manager


def final_rows(contest: Contest, manager: Manager, run: RunHeader) -> list[dict[str, Any]]:
    """One row per candidate: its blocks pooled (ok), or why it has none (skipped/failed); the
    rows carry the blocks' machine reference where one was timed (else the run's)."""
    measured = median_reference(contest.references)
    if measured is None and run.reference is None and contest.references:
        measured = contest.references[-1]  # none measured: the rows say why
    if measured is not None:
        run = dataclasses.replace(run, reference=measured)
    ctx = manager.loaded_context
    dataset: Any = ctx.dataset if ctx is not None else manager.dataset
    rows = []
    for candidate in contest.candidates:
        case = contest.cases.get(candidate.case_id)
        if case is None:
            continue
        parts = contest.parts.get(case.case_id, [])
        listing = case_listing(final_case_id(case.case_id), case)
        listing.update(stage=STAGE, case_id=final_case_id(case.case_id))
        dropped = contest.dropped.get(case.case_id)
        measurement = None
        status, reason = "ok", None
        if dropped and not parts:
            status, _, reason = dropped.partition(": ")
        elif parts:
            measurement = pool(parts)
            measurement.extra = {
                **measurement.extra,
                "matrix_case_id": case.case_id,
                "matrix_images_per_s": candidate.images_per_s,
                "final_why": candidate.why,
                "final_blocks": len(parts),
                "final_block_images_per_s": measurement.process_images_per_s,
                # the reference timed before each block (None where it failed), beside them
                "final_block_reference_1": [r.one_images_per_s for r in contest.references],
                "final_block_reference_all": [r.all_images_per_s for r in contest.references],
                "final_candidates": len(contest.candidates),
                "final_orders": json.dumps(contest.orders),
                **({"final_dropped": dropped} if dropped else {}),
            }
        else:
            continue  # not measured yet (a block in progress)
        rows.append(
            case_row(
                run,
                listing,
                case,
                measurement,
                status,
                reason,
                wall_s=contest.wall_s.get(case.case_id, 0.0),
                dataset=dataset,
                settings=manager.settings,
                columns=measurement.columns if measurement is not None else None,
            )
        )
    return rows
