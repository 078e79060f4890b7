"""Runs from two machines: the pairs by comparison key, the reference's predicted ratio per
configuration, and what ``imgbench compare`` and its reports say about them.

The machines are constructed: machine A's reference reads 100 images/s on one thread and 190 on
its 2 cores; machine B's (A under a CPU quota of one core, say) 50 and 50. A configuration of
``p`` busy processes is then predicted at ``ref_B(p) / ref_A(p)``: 0.5 at one, 50/190 = 0.263 at
two or more.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from typer.testing import CliRunner

from imgbench.answer import answers
from imgbench.cli import app
from imgbench.compare import compare_frames
from imgbench.compare.machines import compare_machines, parallel_units, reference_at
from imgbench.compare.report import to_json, to_markdown
from imgbench.measure.reference import MachineReference
from imgbench.results.schema import comparison_key, to_table
from imgbench.results.store import migrate, write_rows
from tests.dashboard.fixtures import run_rows, slow_down, standard_runs

WORKLOAD = "decode+augment-v1:0123456789ab"
MACHINE_A = MachineReference(WORKLOAD, 100.0, 190.0, 2)
MACHINE_B = MachineReference(WORKLOAD, 50.0, 50.0, 2)
runner = CliRunner()


def predicted(parallel: int, a: MachineReference = MACHINE_A, b: MachineReference = MACHINE_B):  # type: ignore[no-untyped-def]
    def at(ref: MachineReference) -> float:
        assert ref.one_images_per_s and ref.all_images_per_s and ref.cores
        return reference_at(ref.one_images_per_s, ref.all_images_per_s, ref.cores, parallel)

    return at(b) / at(a)


def machine_rows(
    reference: MachineReference | None,
    *,
    run_id: str,
    scale: bool = False,
    off: dict[str, float] | None = None,
    **changes: Any,
) -> list[dict[str, Any]]:
    """The fixture's read and loader rows on one machine; ``scale``: every rate times what the
    references predict (machine B's rows), and the rates of the cases of ``off`` times their
    factor on top (what the reference does not explain)."""
    base = standard_runs()[0]
    spec = replace(base, run_id=run_id, **changes)
    rows = run_rows(spec, stages=("read", "loader"))
    if scale:
        for row in list(rows):
            factor = 1 / predicted(parallel_units(row)) / (off or {}).get(row["case_id"], 1.0)
            rows = slow_down(rows, row["case_id"], factor)
    for row in rows:
        row.update(reference.columns() if reference else {})
        row["comparison_key"] = comparison_key(row)
    return rows


def frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    return migrate(to_table(rows))


def first_case(rows: list[dict[str, Any]], stage: str, **params: Any) -> str:
    for row in rows:
        found = json.loads(row["params_json"])
        if row["stage"] == stage and all(found.get(k) == v for k, v in params.items()):
            return str(row["case_id"])
    raise AssertionError(f"no {stage} row with {params}")


@pytest.fixture(scope="module")
def sides() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Machine A, and machine B exactly as the references predict but for two cases: one 25%
    faster than predicted, one 20% slower."""
    a = machine_rows(MACHINE_A, run_id="20261120T120000Z-quick-aaaaaa")
    two = first_case(a, "loader", workers=2)
    one = first_case(a, "read", threads=1)
    b = machine_rows(
        MACHINE_B,
        run_id="20261121T120000Z-quick-bbbbbb",
        scale=True,
        off={two: 1.25, one: 0.8},
    )
    return a, b


def test_the_reference_is_linear_between_its_points_and_flat_past_the_cores() -> None:
    assert reference_at(100, 190, 2, 1) == 100
    assert reference_at(100, 190, 2, 2) == 190 == reference_at(100, 190, 2, 8)
    assert reference_at(100, 340, 4, 2) == 180
    assert reference_at(100, 100, 1, 4) == 100  # one core: the one-thread figure throughout
    assert predicted(2) == pytest.approx(0.263, abs=5e-4) and predicted(1) == 0.5


def test_parallel_units_are_workers_else_threads_else_one() -> None:
    assert parallel_units({"workers": 2, "threads": 1}) == 2
    assert parallel_units({"workers": 0, "threads": 1}) == 1  # the 0-worker loader: one process
    assert parallel_units({"workers": None, "threads": 4}) == 4
    assert parallel_units({"workers": float("nan"), "threads": None}) == 1  # library default
    assert parallel_units({"workers": pd.NA, "threads": pd.NA}) == 1


def test_each_configuration_gets_the_references_predicted_ratio(sides) -> None:  # type: ignore[no-untyped-def]
    a, b = sides
    machines = compare_machines(frame(a), frame(b))
    rows = machines.rows.set_index("case_id")
    two, zero = first_case(a, "loader", workers=2), first_case(a, "loader", workers=0)
    one = first_case(a, "read", threads=1)
    assert rows.loc[two, "parallel"] == 2 and rows.loc[zero, "parallel"] == 1
    assert rows.loc[two, "predicted"] == pytest.approx(0.263, abs=5e-4)
    assert rows.loc[zero, "predicted"] == pytest.approx(0.5)
    assert rows.loc[zero, "explained"] == pytest.approx(1.0, rel=1e-6)  # as the model says
    # the two cases made off: 25% faster than predicted (the reference explains 80% of the
    # ratio), and 20% slower (it explains 125%)
    assert rows.loc[two, "ratio"] == pytest.approx(0.263 * 1.25, abs=1e-3)
    assert rows.loc[two, "explained"] == pytest.approx(0.8)
    assert rows.loc[one, "explained"] == pytest.approx(1.25)
    assert machines.median_error() == pytest.approx(0.0, abs=1e-9)
    assert machines.references_differ and machines.shown and not machines.other_machines


def test_pairs_need_the_same_library_version_and_dataset(sides) -> None:  # type: ignore[no-untyped-def]
    a, b = sides
    bumped = first_case(a, "read", threads=1)
    moved = first_case(a, "loader", workers=0)
    b = [
        {**r, "library_version": "1.1"}
        if r["case_id"] == bumped
        else {**r, "dataset_fingerprint": "fp-other"}
        if r["case_id"] == moved
        else r
        for r in b
    ]
    machines = compare_machines(frame(a), frame(b))
    assert machines.not_comparable[bumped] == "library_version 1.0 vs 1.1"
    assert machines.not_comparable[moved] == "dataset_fingerprint fp-synth-small vs fp-other"
    assert {bumped, moved}.isdisjoint(machines.rows["case_id"])
    assert f"not comparable: {bumped}: library_version 1.0 vs 1.1" in machines.summary()
    # the regression check still judges a version bump (a gate must see it), and says so
    same_data = [r for r in b if r["case_id"] != moved]
    result = compare_frames(frame(a), frame(same_data))
    assert bumped in set(result.rows["case_id"])
    assert any(bumped in w and "another library version" in w for w in result.warnings)


def test_rows_without_a_reference_are_paired_but_not_predicted(sides) -> None:  # type: ignore[no-untyped-def]
    a, b = sides
    old = machine_rows(None, run_id="20261101T000000Z-old-cccccc")
    failed = [{**r, "reference_error": "not measured: OSError: no fork"} for r in b]
    for row in failed:
        row.update(reference_1_images_per_s=None, reference_all_images_per_s=None)
    machines = compare_machines(frame(old), frame(failed))
    assert len(machines.rows) and machines.rows["predicted"].isna().all()
    assert machines.median_error() is None and not machines.shown
    assert "no machine reference in the baseline (rows older than the reference)" in machines.notes
    assert "no machine reference in the candidate: not measured: OSError: no fork" in machines.notes
    other = MachineReference("decode+augment-v2:ffffffffffff", 50.0, 50.0, 2)
    changed = machine_rows(other, run_id="20261121T120000Z-quick-dddddd")
    machines = compare_machines(frame(a), frame(changed))
    assert machines.rows["predicted"].isna().all()
    assert any("different workloads" in note for note in machines.notes)


def test_the_summary_names_the_answers_pick(sides) -> None:  # type: ignore[no-untyped-def]
    a, b = sides
    pick = next(x.best for x in answers(frame(a)) if x.best is not None)
    result = compare_frames(frame(a), frame(b))
    machines = result.machines
    assert machines is not None and machines.pick == pick.case_id
    line = next(s for s in machines.summary() if s.startswith("the answer's pick"))
    row = machines.pick_row()
    assert row is not None and f"machine ratio {row['ratio']:.3f}" in line
    assert "reference predicts" in line and "it explains" in line
    named = first_case(a, "loader", workers=2)
    chosen = compare_frames(frame(a), frame(b), case=named).machines
    assert chosen is not None and chosen.pick == named
    assert "it explains 80% (error -20.0%)" in chosen.summary()[2]


def _write(folder: Path, rows: list[dict[str, Any]]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    write_rows(rows, folder / f"{rows[0]['run_id']}.parquet")
    return folder


def test_imgbench_compare_prints_the_machine_ratio_and_what_the_reference_explains(
    sides,  # type: ignore[no-untyped-def]
    tmp_path: Path,
) -> None:
    a, b = sides
    named = first_case(a, "loader", workers=2)
    out = runner.invoke(
        app,
        [
            "compare",
            str(_write(tmp_path / "a", a)),
            str(_write(tmp_path / "b", b)),
            "--case",
            named,
            "--json",
            str(tmp_path / "r.json"),
        ],
        catch_exceptions=False,
    )
    text = " ".join(out.output.split())
    assert out.exit_code == 1  # machine B is slower everywhere: the regression check says so
    for words in ("machine ratio", "reference predicts", "reference explains"):
        assert words in text
    assert "the reference explains the machine ratio within 0.0%" in text
    assert f"the named configuration ({named}): machine ratio 0.329" in text
    assert "it explains 80% (error -20.0%)" in text
    doc = json.loads((tmp_path / "r.json").read_text())["machines"]
    assert doc["pick"]["case_id"] == named and doc["pick"]["explained"] == pytest.approx(0.8)
    assert doc["baseline_reference"]["one"] == 100.0 and doc["candidate_reference"]["every"] == 50.0
    assert len(doc["rows"]) == len(compare_machines(frame(a), frame(b)).rows)


def test_the_same_speed_on_both_sides_is_one_line_unless_asked(tmp_path: Path) -> None:
    a = machine_rows(MACHINE_A, run_id="20261120T120000Z-quick-aaaaaa")
    again = machine_rows(
        replace(MACHINE_A, one_images_per_s=104.0), run_id="20261121T120000Z-quick-eeeeee"
    )
    args = ["compare", str(_write(tmp_path / "a", a)), str(_write(tmp_path / "b", again))]
    plain = runner.invoke(app, args, catch_exceptions=False)
    text = " ".join(plain.output.split())
    assert "the same machine's speed on both sides" in text and "1.04x on 1 thread" in text
    assert "reference explains" not in text
    asked = runner.invoke(app, [*args, "--machines"], catch_exceptions=False)
    assert "reference explains" in " ".join(asked.output.split())


def test_the_markdown_report_has_the_machines_section(sides) -> None:  # type: ignore[no-untyped-def]
    a, b = sides
    result = compare_frames(frame(a), frame(b))
    markdown = to_markdown(result)
    assert "### Machines (candidate / baseline)" in markdown
    assert (
        "| case | parallel | cores busy | baseline images/s | candidate images/s | machine ratio |"
        in markdown
    )
    lines = markdown.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("| case | parallel"))
    assert lines[header + 1].count("|") == lines[header].count("|")  # a separator per column
    assert to_json(result)["machines"]["shown"] is True
    assert not math.isnan(to_json(result)["machines"]["median_abs_error"])


def _busy(rows: list[dict[str, Any]], case_id: str, cores: float) -> list[dict[str, Any]]:
    """``rows`` with ``case_id``'s row saying its processes kept ``cores`` cores busy."""
    out = []
    for row in rows:
        if row["case_id"] == case_id:
            extra = json.loads(row.get("extra_json") or "{}")
            extra.update(cpu_cores_busy=cores + 0.05, background_cores_busy=0.05)
            row = {**row, "extra_json": json.dumps(extra)}
        out.append(row)
    return out


def test_a_loader_is_read_at_the_cores_it_kept_busy_where_it_could(sides) -> None:  # type: ignore[no-untyped-def]
    # the two-worker loader kept 1.5 cores busy on A and 1.0 under B's quota: both references
    # are read at 1.5, between one thread and every core (A: 145, B: 50), not at 2
    a, b = sides
    two = first_case(a, "loader", workers=2)
    machines = compare_machines(frame(_busy(a, two, 1.5)), frame(_busy(b, two, 1.0)))
    row = machines.rows.set_index("case_id").loc[two]
    assert row["parallel"] == 2 and row["cores_busy"] == pytest.approx(1.5)
    assert row["predicted"] == pytest.approx(50 / 145)
    # rows that do not say how busy they kept the cores are read at their workers
    plain = compare_machines(frame(a), frame(b)).rows.set_index("case_id").loc[two]
    assert plain["cores_busy"] == 2 and plain["predicted"] == pytest.approx(50 / 190)
