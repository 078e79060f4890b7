"""`imgbench advise --target`: configurations that reach the target, fewest workers and least
memory first, with what limits them; and what to do when none does."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from typer.testing import CliRunner

from imgbench.cli import app
from imgbench.machine import machine_info
from imgbench.results.schema import empty_row
from imgbench.results.store import write_rows


def _row(library: str, workers: int, ips: float, pss: int, stages: dict, **params: object) -> dict:
    row = empty_row()
    row.update(machine_info().as_row())
    extra = {
        "stage_times_s": stages,
        "peak_pss_bytes": pss,
        "pipeline": "files > opencv/imdecode-rgb > albumentations/numpy:train-classification",
        "pipeline_s_per_image": sum(stages.values()),
        "parallel_efficiency": params.pop("efficiency", 0.95),
    }
    all_params = {"workers": workers, "batch_size": 32, **params}
    row.update(
        run_id="r1",
        created_utc=datetime.now(UTC),
        stage="loader",
        case_id=f"loader/{library}/v[{json.dumps(all_params, sort_keys=True)}]",
        library=library,
        variant="files-opencv-albumentations",
        workers=workers,
        batch_size=32,
        params_json=json.dumps(all_params),
        extra_json=json.dumps(extra),
        status="ok",
        images_per_s_median=ips,
        peak_rss_bytes=pss,
    )
    return row


STAGES = {"read": 0.0001, "decode": 0.0015, "augment": 0.0016, "collate": 0.0002}


def _results(tmp_path: Path) -> Path:
    rows = [
        _row("torch-dataloader", 0, 300.0, 900_000_000, STAGES),
        _row("torch-dataloader", 2, 560.0, 1_500_000_000, STAGES),
        _row("torch-dataloader", 4, 580.0, 2_100_000_000, STAGES),
        _row("threadpool", 2, 560.0, 1_000_000_000, STAGES),
        _row("torch-dataloader", 2, 99.0, 1_500_000_000, STAGES, accelerator_images_per_s=100),
        _row(
            "torch-dataloader",
            2,
            290.0,
            1_500_000_000,
            {"read": 0.0001, "decode": 0.004, "augment": 0.001, "collate": 0.0},
            efficiency=0.4,
        ),
    ]
    rows[-1]["variant"] = "files-opencv-none"
    rows[-1]["case_id"] += "-none"
    write_rows(rows, tmp_path / "r1.parquet")
    return tmp_path


def test_reaching_configurations_fewest_workers_and_least_memory_first(tmp_path: Path) -> None:
    result = CliRunner(env={"COLUMNS": "250"}).invoke(
        app, ["advise", "--target", "500", "--results", str(_results(tmp_path))]
    )
    assert result.exit_code == 0, result.output
    assert "3 configuration(s) reach it" in result.output
    assert (
        "threadpool" in result.output.split("Fewest workers and least memory:")[1].splitlines()[0]
    )
    table = result.output.split("Reaching the target")[1]
    assert table.index("threadpool") < table.index("torch-dataloader")  # 1.0 GB before 1.5 GB
    assert "augment 1.60 ms/img" in result.output
    assert "99" not in result.output.split("Reaching the target")[1]  # AU rows are not steady state


def test_no_configuration_reaches_the_target(tmp_path: Path) -> None:
    result = CliRunner(env={"COLUMNS": "250"}).invoke(
        app, ["advise", "--target", "5000", "--results", str(_results(tmp_path))]
    )
    assert result.exit_code == 0, result.output
    assert "No configuration reaches 5,000 images/s" in result.output
    assert "about 17 busy cores" in result.output  # 3.4 ms of work per image x 5000/s
    assert "hand-over between processes" in result.output  # the 0.4-efficiency row


def test_no_results(tmp_path: Path) -> None:
    result = CliRunner(env={"COLUMNS": "250"}).invoke(
        app, ["advise", "--target", "100", "--results", str(tmp_path)]
    )
    assert result.exit_code == 2
    assert "no loader rows" in result.output


def test_an_80_column_terminal_folds_instead_of_cutting(tmp_path: Path) -> None:
    result = CliRunner(env={"COLUMNS": "80"}).invoke(
        app, ["advise", "--target", "500", "--results", str(_results(tmp_path))]
    )
    assert result.exit_code == 0, result.output
    assert "…" not in result.output
    assert max(len(line) for line in result.output.splitlines()) <= 80
