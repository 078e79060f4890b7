"""The imgbench command line, through Typer's runner and as a real subprocess."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from typer.testing import CliRunner

from imgbench.cli import app
from imgbench.results.schema import empty_row
from imgbench.results.store import write_rows

runner = CliRunner(env={"COLUMNS": "250"})


def _results(folder: Path) -> Path:
    row = empty_row()
    row.update(
        run_id="20261122T000000Z-ci-abc123",
        created_utc=datetime(2026, 11, 22, tzinfo=UTC),
        hostname="box",
        dataset_name="tiny",
        stage="read",
        case_id="read/pillow/open-convert[codec=jpeg]",
        status="ok",
        images_per_s_median=1000.0,
        images_per_s_q1=900.0,
        images_per_s_q3=1100.0,
        megapixels_per_s_median=50.0,
        latency_ms_p99=1.5,
    )
    skipped = {**row, "case_id": "read/x/y[]", "status": "skipped", "reason": "x not installed"}
    write_rows([row, skipped], folder / f"{row['run_id']}.parquet")
    return folder


def test_run_with_missing_dataset_is_one_line(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "imgbench.cli", "run", "--dataset", "/no/such/photos"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip() == "error: dataset path does not exist: /no/such/photos"


def test_unknown_profile_is_refused() -> None:
    result = runner.invoke(app, ["run", "--profile", "turbo"])
    assert result.exit_code == 2
    assert "unknown profile 'turbo'" in result.output


def test_results_list_and_show(tmp_path: Path) -> None:
    folder = _results(tmp_path)
    listed = runner.invoke(app, ["results", "list", str(folder)])
    assert listed.exit_code == 0, listed.output
    assert "20261122T000000Z-ci-abc123" in listed.output
    shown = runner.invoke(app, ["results", "show", "20261122", "--results", str(folder)])
    assert shown.exit_code == 0, shown.output
    assert "1,000" in shown.output and "x not installed" in shown.output
    missing = runner.invoke(app, ["results", "show", "1999", "--results", str(folder)])
    assert missing.exit_code == 2 and "no run matching" in missing.output


def test_results_list_on_empty_folder_says_what_to_run(tmp_path: Path) -> None:
    result = runner.invoke(app, ["results", "list", str(tmp_path)])
    assert result.exit_code == 0
    assert "make bench" in result.output


def test_import_bad_json_is_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    result = runner.invoke(app, ["results", "import", str(bad), "--results", str(tmp_path)])
    assert result.exit_code == 2
    assert "not readable JSON" in result.output


def test_env_lists_libraries_and_dead_ones() -> None:
    result = runner.invoke(app, ["env"])
    assert result.exit_code == 0, result.output
    assert "pillow" in result.output and "available" in result.output
    assert "scipy.misc.imread" in result.output and "unavailable" in result.output
    assert "emulated disks (--disk): " in result.output  # available, or the one-line reason


def test_run_set_reaches_every_row_and_a_bad_control_is_one_line(
    tmp_path: Path, tiny_dataset: Path
) -> None:
    """``imgbench run --set NAME=VALUE``: the one control record (Settings) set for a whole run,
    checked before anything runs, and carried into the rows."""
    bad = runner.invoke(app, ["run", "--profile", "quick", "--set", "roundz=3"])
    assert bad.exit_code != 0 and "unknown setting 'roundz'" in bad.output
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "imgbench.cli",
            "run",
            "--profile=quick",
            f"--dataset={tiny_dataset}",
            f"--results={tmp_path / 'results'}",
            "--no-envs",
            "-k",
            "read and pillow and open-convert and memory",
            "--set",
            "rounds=2",
            "--set",
            "max_images=4",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    import pandas as pd

    rows = pd.concat(pd.read_parquet(p) for p in (tmp_path / "results").glob("*.parquet"))
    ok = rows[rows["status"] == "ok"]
    assert len(ok) >= 1 and (ok["rounds"] == 2).all() and (ok["max_images"] == 4).all()
