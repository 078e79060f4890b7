"""A/A on two real runs of the quick reader bench: `imgbench compare` must say nothing regressed.

The two pytest sessions run at the same time, so both meet the same load from whatever else
the machine is doing (on a shared 2-core box, two runs minutes apart differed by up to 2x;
docs/regression.md). This checks the whole path: bench -> parquet and JSON -> compare -> exit 0.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from imgbench.cli import app

BENCHES = Path(__file__).resolve().parents[2] / "benches"


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory, tiny_dataset: Path) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("aa")
    procs = {}
    for name in ("a", "b"):
        args = [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-q",
            str(BENCHES / "bench_readers.py"),
            f"--dataset={tiny_dataset}",
            "--imgbench-profile=quick",
            f"--imgbench-results={out / name}",
            f"--benchmark-storage={out / 'storage'}",
            "--benchmark-save-data",
            f"--benchmark-json={out / (name + '.json')}",
            "-k",
            "jpeg and (pillow or opencv)",
        ]
        procs[name] = subprocess.Popen(
            args, cwd=out, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
    for name, proc in procs.items():
        output, _ = proc.communicate(timeout=120)
        assert proc.returncode == 0, f"run {name}:\n{output[-3000:]}"
    return {"a": out / "a", "b": out / "b", "a_json": out / "a.json", "dir": out}


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
