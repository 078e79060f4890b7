"""A/A on two real runs of the quick reader bench: `imgbench compare` must say nothing regressed.

The two pytest sessions run at the same time, so both meet the same load from whatever else
the machine is doing (on a shared 2-core box, two runs minutes apart differed by up to 2x;
docs/regression.md). This checks the whole path: bench -> parquet and JSON -> compare -> exit 0.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from imgbench.cli import app
from tests.shared_runs import ReaderRun


@pytest.fixture(scope="module")
def two_runs(
    reader_runs: dict[str, ReaderRun], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Path]:
    """The test session's reader pair (tests/shared_runs.py: two simultaneous quick sessions,
    pillow and OpenCV on JPEG and PNG); tests/measure/test_readers_bench_e2e.py reads it too."""
    for name, run in reader_runs.items():
        assert run.returncode == 0, f"run {name}:\n{run.output[-3000:]}"
    a, b = reader_runs["a"], reader_runs["b"]
    return {"a": a.results, "b": b.results, "a_json": a.json, "dir": tmp_path_factory.mktemp("aa")}


def test_two_runs_of_the_same_code_do_not_regress(two_runs: dict[str, Path]) -> None:
    result = CliRunner().invoke(
        app,
        [
            "compare",
            str(two_runs["a"]),
            str(two_runs["b"]),
            "--markdown",
            str(two_runs["dir"] / "aa.md"),
        ],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    assert "0 regressed" in result.output
    assert "imgbench regression check" in (two_runs["dir"] / "aa.md").read_text()


def test_pytest_benchmark_json_compares_with_its_parquet(two_runs: dict[str, Path]) -> None:
    result = CliRunner().invoke(
        app, ["compare", str(two_runs["a_json"]), str(two_runs["a"])], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    assert "0 regressed" in result.output
