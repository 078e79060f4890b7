"""``imgbench final``, and the final ``imgbench run`` holds after its sessions: choose the
candidates from one run's main-session rows, measure them head to head, write their rows."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated

import pandas as pd
import typer

from imgbench.controls import resolve
from imgbench.final.plan import FinalPlan
from imgbench.final.run import Contest, final_rows, measure_final
from imgbench.final.select import choose
from imgbench.measure.manager import Manager
from imgbench.measure.reference import reference_from_env
from imgbench.measure.rows import RunHeader, new_run_id
from imgbench.profiles import ProfileChoice
from imgbench.results.location import ResultsLocation
from imgbench.results.store import rows_table


@dataclass(frozen=True)
class FinalResult:
    written: str | None  # the parquet file's name, when rows were written
    lines: list[str]  # what the final says about itself


def main_session_rows(frame: pd.DataFrame, run_name: str, group: str | None) -> pd.DataFrame:
    """The loader rows of one session, named by its run name or run id (and ``group`` when
    given)."""
    if frame.empty:
        return frame
    named = frame["run_name"].astype(str).eq(run_name) | frame["run_id"].astype(str).eq(run_name)
    mask = named & frame["stage"].eq("loader")
    if group is not None:
        mask &= frame["run_group"].astype(str).eq(group)
    return frame[mask.to_numpy(dtype=bool, na_value=False)]


def hold_final(
    rows: pd.DataFrame,
    location: ResultsLocation,
    profile: str,
    dataset: str,
    run_name: str,
    group: str | None,
    say: Callable[[str], None] = print,
) -> FinalResult:
    """Choose, measure and write the final of ``rows`` (one session's loader rows)."""
    choice = ProfileChoice(profile)
    resolved = choice.resolve()
    plan = resolved.plan(FinalPlan)
    if plan.blocks < 1:
        return FinalResult(None, [f"final: the {profile} profile holds none (final.blocks = 0)"])
    selection = choose(rows, plan)
    if not selection.candidates:
        why = "no timed loader rows" if selection.answer is None else "no candidate runs here"
        return FinalResult(None, [f"final: not held ({why})", *selection.left_out])
    name = f"{run_name}-final"
    run_id = new_run_id(name)
    # `imgbench run`'s reference (its variable); for `imgbench final` alone, measured now only
    # where the blocks time none of their own (FinalPlan.reference_s = 0)
    reference = reference_from_env(measure=plan.reference_s <= 0)
    run = RunHeader(run_id, name, group or run_id, reference=reference)
    file_name = f"{run_id}.parquet"
    say(
        f"final: {len(selection.candidates)} candidates x {plan.blocks} blocks of {plan.rounds} "
        "rounds, interleaved"
    )

    def write(contest: Contest, manager: Manager) -> None:
        rows_now = final_rows(contest, manager, run)
        if rows_now:
            location.write_table(file_name, rows_table(rows_now))

    contest, manager = measure_final(
        selection.candidates, choice, resolved, dataset, resolve(resolved), plan, write, say
    )
    try:
        write(contest, manager)
    finally:
        manager.close()
    lines = [f"final: {c.case_id} ({c.why})" for c in selection.candidates]
    lines += [f"final: left out {line}" for line in selection.left_out]
    lines += [f"final: dropped {case}: {why}" for case, why in contest.dropped.items()]
    return FinalResult(file_name, lines)


def newest_run_name(frame: pd.DataFrame) -> str | None:
    """The newest run (its name, else its id) with ok loader rows in the main environment."""
    if frame.empty:
        return None
    env = frame["environment"].fillna("main").astype(str)
    ok = frame[
        (frame["stage"] == "loader").to_numpy(dtype=bool, na_value=False)
        & (frame["status"] == "ok").to_numpy(dtype=bool, na_value=False)
        & (env == "main").to_numpy(dtype=bool)
    ]
    if ok.empty:
        return None
    newest = ok.sort_values("created_utc", kind="stable").iloc[-1]
    name = newest["run_name"]
    return str(name) if isinstance(name, str) and name else str(newest["run_id"])


def final_command(
    results: Annotated[
        str, typer.Option(help="folder (or s3:// prefix) of the run's parquet files")
    ] = "results",
    run_name: Annotated[
        str | None,
        typer.Option("--run", help="the run's name (--benchmark-save NAME); default: the newest"),
    ] = None,
    profile: Annotated[str, typer.Option(help="the profile the run used")] = "default",
    dataset: Annotated[
        str | None, typer.Option(help="the run's dataset (a folder or a recipe name)")
    ] = None,
) -> None:
    """Re-measure a run's best loader configurations head to head (interleaved blocks) and
    write their rows (stage `final`), which the answer then uses."""
    from imgbench.console import console, fail
    from imgbench.datasets import DatasetError, load_dataset
    from imgbench.profiles import ProfileError, get_profile
    from imgbench.results.location import ResultsLocationError, results_location
    from imgbench.results.store import load_results

    try:
        chosen = get_profile(profile)
        location = results_location(results)
        frame = load_results(results).frame
    except (ProfileError, ResultsLocationError) as exc:
        raise fail(str(exc)) from None
    name = run_name or newest_run_name(frame)
    if name is None:
        raise fail(f"no run with timed loader rows in {results}: run `imgbench run -k loader`")
    rows = main_session_rows(frame, name, None)
    if rows.empty:
        raise fail(f"run {name!r} has no loader rows in {results}")
    spec = dataset or chosen.dataset
    try:
        fingerprint = load_dataset(spec).fingerprint
    except DatasetError as exc:
        raise fail(f"dataset: {exc}") from None
    measured = set(rows["dataset_fingerprint"].dropna().astype(str))
    if fingerprint not in measured:
        raise fail(
            f"run {name!r} measured dataset {', '.join(sorted(measured))}, not {spec} "
            f"({fingerprint}): pass --dataset"
        )
    rows = rows[rows["dataset_fingerprint"].astype(str).eq(fingerprint).to_numpy(dtype=bool)]
    result = hold_final(rows, location, profile, spec, name, None, say=console.print)
    for line in result.lines:
        console.print(line, highlight=False, soft_wrap=True)
    if result.written:
        console.print(f"results: {location.path_of(result.written)}", highlight=False)
