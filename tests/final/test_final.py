"""The head-to-head final on a real quick matrix: who it chooses, that it measures them in
shuffled interleaved blocks from one server, and the rows it writes (stage ``final``)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from imgbench.answer.intervals import Interval
from imgbench.answer.measured import Measured
from imgbench.answer.rows import Configuration
from imgbench.cli import app
from imgbench.final import run as final_run
from imgbench.final.plan import FinalPlan
from imgbench.final.run import PREFIX
from imgbench.final.select import best_of_each_system, choose, leaner_plausible_ties, system_of
from imgbench.measure.reference import MachineReference
from imgbench.measure.settings import Settings
from imgbench.profiles import get_profile
from tests.shared_runs import SessionRun


def _loader_rows(run: SessionRun) -> pd.DataFrame:
    rows = run.frame("loader")
    assert (rows["status"] == "ok").any(), run.output
    return rows


def test_choose_takes_the_pick_the_best_of_each_system_and_both_common_defaults(
    quick_session: SessionRun,
) -> None:
    rows = _loader_rows(quick_session)
    plan = FinalPlan(next_few=1, max_candidates=4)
    selection = choose(rows, plan)
    answer = selection.answer
    assert answer is not None and answer.best is not None
    ids = [c.case_id for c in selection.candidates]
    assert ids[0] == answer.best.case_id  # the pick, even when the set is larger than the room
    # then the best row of each system within the plausible range, fastest system first, as far
    # as room allows (the leaner plausible ties, the rest of the set and the next few after them)
    environment = dict(zip(rows["case_id"], rows["environment"].fillna("main"), strict=True))
    bests = [
        next(m for m in found if environment[m.case_id] == "main")
        for found in best_of_each_system(answer.candidates).values()
        if any(environment[m.case_id] == "main" for m in found)
    ]
    expected = list(dict.fromkeys([answer.best.case_id, *(m.case_id for m in bests)]))
    chosen = [c for c in selection.candidates if not c.why.startswith("common default")]
    shown = min(len(chosen), len(expected))
    assert [c.case_id for c in chosen[:shown]] == expected[:shown]
    by_id = {m.case_id: m for m in answer.candidates}
    assert all(c.why == f"best of {system_of(by_id[c.case_id])}" for c in chosen[1:shown])
    ties = {m.case_id for m in [*leaner_plausible_ties(answer.candidates), *answer.equivalent]}
    for c in chosen[shown:]:  # past the systems' places: ties, then the next few
        assert c.why == "next" or (c.why in ("lean", "equivalent") and c.case_id in ties)
    assert len(ids) == len(set(ids)) <= plan.max_candidates
    for default in (answer.default_0, answer.default_cores):
        assert default is not None
        assert default.case_id in ids  # the speed-ups' base is always re-measured
    # a candidate of another environment is left out with the reason, never measured here
    moved = rows.copy()
    moved.loc[moved["case_id"] == answer.best.case_id, "environment"] = "pillow-simd"
    other = choose(moved, plan)
    assert answer.best.case_id not in [c.case_id for c in other.candidates]
    assert any("pillow-simd" in line for line in other.left_out)


def test_imgbench_final_writes_interleaved_rows(
    quick_session: SessionRun, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the machine reference timed before each block (stood in for: the test times nothing)
    timed = iter([300.0, 500.0, 400.0, 350.0])
    monkeypatch.setattr(final_run, "turned_off", lambda: False)
    monkeypatch.setattr(
        final_run,
        "safe_reference",
        lambda seconds: MachineReference("w", (one := next(timed)), 2 * one, 2),
    )
    results = tmp_path / "results"
    shutil.copytree(quick_session.results, results)
    rows = _loader_rows(quick_session)
    run_id = str(rows["run_id"].iloc[0])  # the session ran without --benchmark-save: no name
    plan = get_profile("quick").plan(FinalPlan)
    outcome = CliRunner().invoke(
        app,
        [
            "final",
            "--results",
            str(results),
            "--run",
            run_id,
            "--profile",
            "quick",
            "--dataset",
            str(quick_session.dataset),
        ],
    )
    assert outcome.exit_code == 0, outcome.output
    written = [p for p in results.glob("*.parquet") if "-final-" in p.name]
    assert len(written) == 1, outcome.output
    final = pd.read_parquet(written[0])
    assert set(final["stage"]) == {"final"}
    assert final["run_name"].eq(f"{run_id}-final").all()
    ok = final[final["status"] == "ok"]
    assert len(ok) >= 3, final[["case_id", "status", "reason"]]
    # the rows carry the blocks' reference, the median of each figure (2 blocks: 300 and 500)
    assert plan.blocks == 2 and final["reference_1_images_per_s"].eq(400.0).all()
    assert final["reference_all_images_per_s"].eq(800.0).all()
    matrix_ids = set(rows["case_id"])
    orders: list[list[str]] = []
    for _, row in ok.iterrows():
        extra = json.loads(row["extra_json"])
        assert row["case_id"] == PREFIX + extra["matrix_case_id"]
        assert extra["matrix_case_id"] in matrix_ids
        # every block measured it: its rounds pool the blocks, each block's figure kept
        assert extra["final_blocks"] == plan.blocks
        assert len(extra["final_block_images_per_s"]) == plan.blocks
        assert extra["final_block_reference_1"] == [300.0, 500.0]  # each block's, kept
        assert extra["final_block_reference_all"] == [600.0, 1000.0]
        assert len(row["samples_s"]) == plan.blocks * plan.rounds
        assert row["images_per_s_median"] > 0
        # the configuration is the matrix row's: the answer reads it from the same params
        matrix = rows[rows["case_id"] == extra["matrix_case_id"]].iloc[0]
        assert row["params_json"] == matrix["params_json"]
        assert row["library"] == matrix["library"]
        # and so are what its rounds read from: the disk's facts, as the matrix row has them
        assert pd.notna(row["storage_fs"]) and row["storage_fs"] == matrix["storage_fs"]
        orders = json.loads(extra["final_orders"])
    # each block ran every candidate once, in a shuffled order
    assert len(orders) == plan.blocks
    assert all(sorted(order) == sorted(orders[0]) for order in orders)
    assert set(orders[0]) == {json.loads(e)["matrix_case_id"] for e in ok["extra_json"]}


def _candidate(name: str, loader: str, images_per_s: float, mb: float, processes: int) -> Measured:
    configuration = Configuration(
        loader=loader,
        workers=2,
        format="files",
        decoder="opencv/imdecode-rgb",
        augment="albumentations/numpy",
        recipe="train-classification",
        knobs=(),
        allocator="glibc",
    )
    half = 0.1 * images_per_s  # a 5-round screen's interval, about +-10% here
    return Measured(
        configuration,
        images_per_s,
        name,
        "run",
        mb * 1e6,
        Interval(images_per_s, images_per_s - half, images_per_s + half),
        processes=processes,
    )


def test_the_final_holds_the_leaner_plausible_ties_the_secondary_rule_would_pick() -> None:
    """Five default runs: whichever in-process loader the 5-round screen ranked into the final
    won the memory rule, so the pick moved with the screen's order. Every lean row that could
    still tie now enters the final, whatever its screen rank."""
    candidates = [
        _candidate("dataloader-uint8", "torch-dataloader", 786, 523, 3),
        _candidate("dataloader-simplejpeg", "torch-dataloader", 629, 520, 3),
        _candidate("threadpool-4", "threadpool", 642, 545, 1),
        _candidate("threadpool-2", "threadpool", 600, 432, 1),  # 24% below: may still tie
        _candidate("queue-feeder", "queue-feeder", 698, 417, 1),
        _candidate("threadpool-8", "threadpool", 500, 600, 1),  # 36% below: no final ties it
    ]
    lean = [m.case_id for m in leaner_plausible_ties(candidates)]
    # the fewest processes (one) or within 10% of the least memory, among the plausible ties,
    # fastest first; the worker-process loaders and the row too slow to tie stay out
    assert lean == ["queue-feeder", "threadpool-4", "threadpool-2"]


def test_the_final_rounds_last_at_least_its_own_floor() -> None:
    session = Settings(rounds=10, loader_rounds=5, min_round_s=0.02, processes=2)
    plain = final_run.final_settings(session, FinalPlan(blocks=5, rounds=3))
    assert (plain.rounds, plain.loader_rounds, plain.processes) == (3, 0, 1)
    assert plain.min_round_s == 0.02  # 0: the profile's
    floored = final_run.final_settings(session, FinalPlan(blocks=5, rounds=3, min_round_s=0.5))
    assert floored.min_round_s == 0.5
