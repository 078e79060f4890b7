"""`imgbench compare` end to end on real files: exit codes, named regressions, Markdown, JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
from typer.testing import CliRunner

from imgbench.cli import app
from imgbench.results.pytest_json import rows_from_json  # noqa: F401  (the JSON path is real)
from tests.compare.conftest import save, slowed
from tests.compare.test_stats import READ_JPEG

runner = CliRunner()


def compare(*args: str):  # type: ignore[no-untyped-def]
    return runner.invoke(app, ["compare", *args], catch_exceptions=False)


def test_itself_exits_0(one_run: pd.DataFrame, tmp_path: Path) -> None:
    run = save(one_run, tmp_path / "run.parquet")
    result = compare(str(run), str(run), "--markdown", str(tmp_path / "r.md"))
    assert result.exit_code == 0, result.output
    assert "OK: 0 regressed" in result.output
    assert "✅" in (tmp_path / "r.md").read_text()


def test_slowed_copy_exits_1_and_names_the_case(one_run: pd.DataFrame, tmp_path: Path) -> None:
    results = tmp_path / "results"
    save(one_run, results / "base.parquet")
    save(slowed(one_run, READ_JPEG, 1.15), results / "cand.parquet")
    base_id = one_run["run_id"].iloc[0]
    result = compare(
        base_id[:20],
        f"slowed-{base_id}",
        "--results",
        str(results),
        "--markdown",
        str(tmp_path / "r.md"),
        "--json",
        str(tmp_path / "r.json"),
    )
    assert result.exit_code == 1, result.output
    assert "REGRESSION: 1 regressed" in " ".join(result.output.split())
    markdown = (tmp_path / "r.md").read_text()
    assert f"`{READ_JPEG}`" in markdown and "🔴 regressed" in markdown
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["exit_code"] == 1 and doc["regressed_cases"] == [READ_JPEG]
    assert doc["config"]["threshold"] == 0.10


def test_unusable_input_exits_2(one_run: pd.DataFrame, tmp_path: Path) -> None:
    run = save(one_run, tmp_path / "run.parquet")
    unknown = compare("nosuchrun", str(run), "--results", str(tmp_path))
    assert unknown.exit_code == 2 and "unknown run 'nosuchrun'" in unknown.output
    other = one_run.copy()
    other["dataset_fingerprint"] = "ffffffffffffffff"
    other_path = save(other, tmp_path / "other.parquet")
    result = compare(str(run), str(other_path))
    assert result.exit_code == 2 and "different datasets" in result.output
    moved = one_run.copy()
    moved["machine_id"] = "elsewhere"
    moved_path = save(moved, tmp_path / "moved.parquet")
    assert compare(str(run), str(moved_path)).exit_code == 2
    allowed = compare(str(run), str(moved_path), "--allow-cross-machine")
    assert allowed.exit_code == 0 and "cross-machine" in allowed.output
    missing = compare(str(tmp_path / "missing.parquet"), str(run))
    assert missing.exit_code == 2 and "no such file" in missing.output


def test_ambiguous_prefix_exits_2(aa_frame: pd.DataFrame, tmp_path: Path) -> None:
    first, second = sorted(aa_frame["run_id"].unique())[:2]
    save(aa_frame[aa_frame["run_id"] == first], tmp_path / "a.parquet")
    save(aa_frame[aa_frame["run_id"] == second], tmp_path / "b.parquet")
    result = compare("20261122T", str(tmp_path / "a.parquet"), "--results", str(tmp_path))
    assert result.exit_code == 2 and "ambiguous" in result.output
