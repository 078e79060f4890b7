"""The final compares systems: its places go first to the best row of each system within the
screen's plausible range, then to ties, with at most two rows of one system (the pick and the two
fastest rows excepted). A real make bench's final of ten held five DALI variants as lean plausible
ties and no SPDL, torchdata.nodes or tf.data row; these frames are built like that screen."""

from __future__ import annotations

from typing import Any

import pandas as pd

from imgbench.final.plan import FinalPlan
from imgbench.final.select import (
    MAX_VARIANTS,
    Selection,
    best_of_each_system,
    choose,
    plausible_ties,
    system_of,
)
from tests.final.frames import common_default, frame_of, loader_row

DALI = ("reader-file-2t", "reader-file-4t", "external-source", "tar", "lmdb")
RAY = "loader/ray-data/ray"  # a whole system far below the fastest: outside the plausible range
TF = "loader/tf-data/tfdata-autotune"  # the tensorflow environment's: the final cannot run it


def make_bench_rows(system_column: bool = True) -> list[dict[str, Any]]:
    """Five DALI variants fastest-ish (one process each: every one a lean plausible tie, the
    LMDB one the least memory and the pick), SPDL (its as-documented row the faster, and the
    subprocess variant: one system), torchdata.nodes, the DataLoader, the thread pool and the
    queue feeder within the plausible range, tf.data of the tensorflow environment, Ray Data
    far below, and the common default at 0 and 2 workers."""

    def system(name: str) -> str | None:
        return name if system_column else None

    dali_ips = (800.0, 790.0, 780.0, 770.0, 760.0)
    dali_mb = (900.0, 940.0, 880.0, 870.0, 400.0)
    rows = [
        loader_row(name, "dali", ips, system=system("DALI"), memory_mb=mb, fmt=fmt)
        for name, ips, mb, fmt in zip(
            DALI, dali_ips, dali_mb, ("files", "files", "files", "tar", "lmdb"), strict=True
        )
    ]
    rows += [
        loader_row(
            "tfdata-autotune",
            "tf-data",
            750,
            system=system("tf.data"),
            memory_mb=700,
            environment="tensorflow",
        ),
        loader_row(
            "spdl-documented",
            "spdl",
            745,
            system=system("SPDL"),
            memory_mb=650,
            configured_as="as-documented",
        ),
        loader_row("spdl", "spdl", 740, system=system("SPDL"), memory_mb=640),
        loader_row("spdl-sub", "spdl-subprocess", 735, system=system("SPDL"), memory_mb=660),
        loader_row(
            "uint8",
            "torch-dataloader",
            720,
            system=system("DataLoader"),
            memory_mb=520,
            processes=3,
        ),
        loader_row("nodes", "torchdata-nodes", 650, system=system("torchdata.nodes")),
        loader_row("pool", "threadpool", 640, system=system("thread pool"), memory_mb=430),
        loader_row("feeder", "queue-feeder", 630, system=system("queue feeder"), memory_mb=417),
        loader_row("ray", "ray-data", 300, system=system("Ray Data"), memory_mb=1500),
        common_default(0, 250, system=system("DataLoader")),
        common_default(2, 410, system=system("DataLoader")),
    ]
    return rows


def _ids(selection: Selection) -> list[str]:
    return [c.case_id for c in selection.candidates]


def _why(selection: Selection) -> dict[str, str]:
    return {c.case_id: c.why for c in selection.candidates}


def test_the_final_holds_the_best_of_each_system_not_five_dali_variants() -> None:
    plan = FinalPlan()  # the default profile's: 10 candidates, the next 3
    selection = choose(frame_of(make_bench_rows()), plan)
    answer = selection.answer
    assert answer is not None and answer.best is not None
    ids, why = _ids(selection), _why(selection)
    assert ids[0] == answer.best.case_id == "loader/dali/lmdb"  # the pick first
    assert len(ids) == len(set(ids)) == plan.max_candidates
    # the best row of each system that runs here, each in its own place
    best_of = {
        "DALI": "loader/dali/reader-file-2t",
        "SPDL": "loader/spdl/spdl-documented",
        "DataLoader": "loader/torch-dataloader/uint8",
        "torchdata.nodes": "loader/torchdata-nodes/nodes",
        "thread pool": "loader/threadpool/pool",
        "queue feeder": "loader/queue-feeder/feeder",
    }
    for system, case_id in best_of.items():
        assert case_id in ids, system
        assert why[case_id] == f"best of {system}"
    # DALI: the pick and the two fastest rows, no other variant (the tar and external-source rows
    # were lean plausible ties the old rule gave places to)
    dali = [i for i in ids if i.startswith("loader/dali/")]
    assert sorted(dali) == sorted(
        ["loader/dali/lmdb", "loader/dali/reader-file-2t", "loader/dali/reader-file-4t"]
    )
    assert why["loader/dali/reader-file-4t"] == "equivalent"  # a lean tie in the set
    # SPDL's three rows (two libraries, both kinds of configuration) are one system: one place
    assert [i for i in ids if i.startswith("loader/spdl")] == ["loader/spdl/spdl-documented"]
    # tf.data ran in the tensorflow environment: listed as left out with the reason, no place
    assert TF not in ids
    assert selection.left_out == [f"{TF}: runs in the tensorflow environment (matrix figure kept)"]
    # Ray Data is far below the fastest: no place of its own
    assert RAY not in ids and "best of Ray Data" not in why.values()
    # the common defaults last, the speed-ups' base
    assert answer.default_0 is not None and answer.default_cores is not None
    assert ids[-2:] == [answer.default_0.case_id, answer.default_cores.case_id]
    assert why[ids[-1]] == "common default at 2 workers"


def test_no_system_has_more_than_two_rows_but_the_pick_and_the_two_fastest() -> None:
    """The rule itself, over any room: a system's rows past two are only ever the pick or one of
    the two fastest rows the final can run."""
    frame = frame_of(make_bench_rows())
    for room in range(3, 16):
        selection = choose(frame, FinalPlan(max_candidates=room, next_few=3))
        answer = selection.answer
        assert answer is not None and answer.best is not None
        assert _ids(selection)[0] == answer.best.case_id
        here = [m for m in answer.candidates if not m.case_id.startswith("loader/tf-data")]
        exempt = {answer.best.case_id, *(m.case_id for m in here[:2])}
        systems = {m.case_id: system_of(m) for m in answer.candidates}
        ranked = [c.case_id for c in selection.candidates if not c.why.startswith("common")]
        for system in set(systems.values()):
            rows = [i for i in ranked if systems[i] == system]
            # a row past the system's first two (in the order they took places) is exempt
            assert all(i in exempt for i in rows[MAX_VARIANTS:]), (room, system, rows)
        assert sum(systems[i] == "DALI" for i in ranked) <= 3


def test_results_without_a_system_column_fall_back_to_the_library() -> None:
    for system_column in (False, True):
        rows = make_bench_rows(system_column=False)
        frame = frame_of(rows, system_column=system_column)  # no column, or null in it
        assert ("system" in frame.columns) is system_column
        selection = choose(frame, FinalPlan())
        answer = selection.answer
        assert answer is not None and answer.best is not None
        assert all(m.system == m.configuration.loader for m in answer.candidates)
        ids, why = _ids(selection), _why(selection)
        assert ids[0] == "loader/dali/lmdb"
        # each library is a system of its own: spdl and spdl-subprocess each get a place
        assert why["loader/dali/reader-file-2t"] == "best of dali"
        assert why["loader/spdl/spdl-documented"] == "best of spdl"
        assert why["loader/spdl-subprocess/spdl-sub"] == "best of spdl-subprocess"
        assert why["loader/queue-feeder/feeder"] == "best of queue-feeder"
        assert sum(i.startswith("loader/dali/") for i in ids) == 2
        assert selection.left_out == [
            f"{TF}: runs in the tensorflow environment (matrix figure kept)"
        ]


def test_a_system_whose_best_row_is_outside_the_plausible_range_gets_no_place() -> None:
    frame = frame_of(make_bench_rows())
    selection = choose(frame, FinalPlan(max_candidates=30, next_few=0))
    answer = selection.answer
    assert answer is not None
    plausible = {m.case_id for m in plausible_ties(answer.candidates)}
    assert RAY not in plausible and "loader/dali/reader-file-2t" in plausible
    assert "Ray Data" not in best_of_each_system(answer.candidates)
    assert RAY not in _ids(selection)  # room for everyone, but no system slot and no next
    # a plausible row of each other system has its place
    systems = {system_of(m) for m in answer.candidates if m.case_id in plausible}
    assert systems == {
        "DALI",
        "tf.data",
        "SPDL",
        "DataLoader",
        "torchdata.nodes",
        "thread pool",
        "queue feeder",
    }
    assert {c.why for c in selection.candidates} >= {f"best of {s}" for s in systems - {"tf.data"}}
    # the same screen with Ray Data's row fast enough to tie: now it has its place
    rows = [
        {**r, "images_per_s_median": 700.0, "samples_s": [64 / 700.0] * 10}
        if r["case_id"] == RAY
        else r
        for r in make_bench_rows()
    ]
    moved = choose(pd.DataFrame(rows), FinalPlan())
    assert _why(moved).get(RAY) == "best of Ray Data"
