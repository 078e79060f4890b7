"""`imgbench report`: one self-contained HTML file that renders offline in Chromium (checked in
the dashboard's browser, tests/dashboard/test_browser.py), Markdown for CI, and clear words for
empty, corrupt or mixed inputs."""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from imgbench.cli import app
from imgbench.results.store import load_results
from tests.dashboard.fixtures import run_rows, standard_runs, write_corrupt, write_run

BASE, NEWEST = standard_runs()


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["report", *args])
    return result.exit_code, result.stdout, result.stderr


def best_loader_case(folder: Path, run_id: str) -> str:
    frame = load_results(folder).frame
    rows = frame[(frame["run_id"] == run_id) & (frame["stage"] == "loader")]
    rows = rows[~rows["library"].eq("cow-experiment")]
    rows = rows[~rows["params_json"].str.contains("accelerator_images_per_s")]
    return str(rows.loc[rows["images_per_s_median"].idxmax(), "case_id"])


@pytest.fixture
def results(tmp_path: Path) -> Path:
    folder = tmp_path / "results"
    folder.mkdir()
    for spec in (BASE, NEWEST):
        write_run(folder, spec)
    return folder


def test_markdown_answers_from_the_newest_run(results: Path) -> None:
    code, out, _ = invoke("--results", str(results), "--markdown")
    assert code == 0, out
    assert f"`{NEWEST.run_id}`" in out and BASE.run_id not in out
    assert out.count("### ci-box") == 1
    assert "**Use reader files · decoder opencv/imdecode-rgb" in out
    assert f"`{best_loader_case(results, NEWEST.run_id)} in run {NEWEST.run_id}`" in out
    assert "x) the common default at 0 workers" in out  # the speed-up with its interval
    assert "| 95% interval |" in out
    assert "| experiment | cow-experiment" in out  # a reference, never the answer
    assert "| skipped | read | pyvips" in out


def test_a_named_run_and_a_markdown_file(results: Path, tmp_path: Path) -> None:
    target = tmp_path / "summary.md"
    code, _, _ = invoke(
        BASE.run_id[:20], "--results", str(results), "--markdown", "--out", str(target)
    )
    assert code == 0
    text = target.read_text()
    assert f"`{BASE.run_id}`" in text and NEWEST.run_id not in text


def test_unknown_run_is_one_clear_error(results: Path) -> None:
    code, out, err = invoke("no-such-run", "--results", str(results))
    assert code == 2
    assert "no run matching 'no-such-run'" in err and "Traceback" not in out + err


def test_empty_folder_says_what_is_missing(tmp_path: Path) -> None:
    code, out, _ = invoke("--results", str(tmp_path), "--markdown")
    assert code == 0
    assert "no result files in" in out and "make bench" in out
    assert "### " not in out  # no answer invented


def test_corrupt_file_is_named_and_the_rest_answers(results: Path) -> None:
    write_corrupt(results)
    code, out, err = invoke("--results", str(results), "--markdown")
    assert code == 0
    assert "half-written.parquet" in err and "half-written.parquet" in out
    assert "**Use reader files" in out


def test_two_machines_answer_separately(tmp_path: Path) -> None:
    """One run group measured on two machines: one answer each, never one pooled answer."""
    folder = tmp_path / "results"
    folder.mkdir()
    group = replace(NEWEST, run_group="group-1")
    write_run(folder, group)
    other = replace(
        group,
        run_id="20261122T120000Z-default-eeeeee",
        created=group.created + timedelta(hours=1),
        machine_id="m-big",
        hostname="big-box",
        speed=3.0,
    )
    write_run(folder, other)
    code, out, _ = invoke("--results", str(folder), "--markdown")
    assert code == 0
    sections = re.split(r"^### ", out, flags=re.M)[1:]
    titles = [s.splitlines()[0] for s in sections if not s.startswith("Skipped")]
    assert [t.split(" · ")[0] for t in titles] == ["big-box", "ci-box"]
    assert "never pooled" in out
    for section, run_id in zip(sections, [other.run_id, group.run_id], strict=False):
        cited = set(re.findall(r" in run (\S+?)`", section))
        assert cited == {run_id}


def test_report_rows_are_the_dashboard_rows() -> None:
    """The fixture carries the traps the report must avoid (experiment, ceiling)."""
    libraries = {row["library"] for row in run_rows(BASE)}
    assert {"cow-experiment", "tjbench", "raw-file"} <= libraries
