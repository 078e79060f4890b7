"""``imgbench advise`` (and the Overview: tests/dashboard/test_disk_answer_page.py) says, per measured disk, the format and workers to pick and
whether packing pays off (rows built here: the real disk and the emulated HDD)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from imgbench.cli import app
from imgbench.machine import machine_info
from imgbench.results.schema import empty_row
from imgbench.results.store import write_rows
from tests.loaders.test_advise import STAGES, _row


def _format_row(disk: str, fmt: str, ips: float) -> dict[str, Any]:
    params: dict[str, Any] = {"format": fmt, "mode": "read", "cache_state": "cold"}
    params |= {"order": "shuffled"}
    params |= {"payload": "bytes", "threads": 1}
    row = empty_row()
    row.update(machine_info().as_row())
    row.update(
        run_id="r1",
        created_utc=datetime.now(UTC),
        stage="format",
        case_id=f"format/{fmt}/v[{json.dumps(params, sort_keys=True)}]-{disk}",
        library=fmt,
        variant="v",
        params_json=json.dumps(params),
        status="ok",
        cache_state="cold",
        storage="local",
        disk_profile=disk,
        dataset_name="photos",
        images_per_s_median=ips,
    )
    return row


def _rows() -> list[dict[str, Any]]:
    rows = [_format_row("none", f, ips) for f, ips in (("folder", 4000.0), ("lmdb", 3000.0))]
    rows += [_format_row("hdd", f, ips) for f, ips in (("folder", 150.0), ("lmdb", 600.0))]
    real = _row("torch-dataloader", 2, 560.0, 1_500_000_000, STAGES)
    hdd = _row("torch-dataloader", 2, 140.0, 1_500_000_000, STAGES)
    hdd.update(disk_profile="hdd", cache_state="cold", case_id=hdd["case_id"] + "-hdd")
    real.update(disk_profile="none")
    return [*rows, real, hdd]


def _results(tmp_path: Path) -> Path:
    folder = tmp_path / "results"
    folder.mkdir()
    write_rows(_rows(), folder / "r1.parquet")
    return folder


def test_advise_names_each_disks_pick_and_packing(tmp_path: Path) -> None:
    result = CliRunner(env={"COLUMNS": "250"}).invoke(
        app, ["advise", "--target", "100", "--results", str(_results(tmp_path))]
    )
    assert result.exit_code == 0, result.output
    out = " ".join(result.output.split())
    assert "On the emulated hdd disk: pick torch-dataloader" in out
    assert "with 2 workers (140 images/s, cold reads)" in out
    assert "On the emulated hdd disk packing pays off (lmdb)" in out
    assert "On the real disk packing does not pay off" in out
