"""The report's Disks section: per device line, images/s beside iostat's figures."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from typer.testing import CliRunner

from imgbench.answer.disks import device_line, disk_tables
from imgbench.cli import app
from imgbench.results.store import load_results, write_rows
from tests.dashboard.fixtures import run_rows, standard_runs

_, NEWEST = standard_runs()
HDD = {
    "storage_device": "sdb1",
    "storage_disk": "sdb",
    "storage_device_kind": "partition",
    "storage_rotational": True,
    "storage_model": "ST4000DM004",
    "storage_fs": "ext4",
    "storage_mount_options": "rw,relatime",
}


def _rows_on_disks() -> list[dict]:
    rows = run_rows(NEWEST, stages=("read", "format", "loader"))
    for i, row in enumerate(rows):
        if row["stage"] == "format":
            row.update(HDD, io_reads_per_s=120.0 + i, io_read_kb_per_s=9000.0)
            row.update(io_r_await_ms=8.5, io_util_pct=97.0, io_window_s=1.0)
        elif row["stage"] == "read":
            row.update(storage_device_kind="none", storage_fs="tmpfs")
    return rows


def test_device_lines_and_tables(tmp_path: Path) -> None:
    path = tmp_path / "results" / f"{NEWEST.run_id}.parquet"
    path.parent.mkdir()
    write_rows(_rows_on_disks(), path)
    frame = load_results(path.parent).frame
    tables = {t.device: t.table for t in disk_tables(frame)}
    hdd = "sdb1 (partition, rotational, ST4000DM004, ext4 rw,relatime)"
    assert set(tables) == {hdd, "no block device (tmpfs)"}
    formats = tables[hdd]
    assert set(formats["stage"]) == {"format"}
    assert formats["%util"].eq(97.0).all() and formats["r_await ms"].eq(8.5).all()
    assert formats["images/s"].notna().all()
    assert tables["no block device (tmpfs)"]["r/s"].isna().all()  # no counters: blank, no error
    assert device_line(frame.iloc[0][[]]) == "unknown"  # a row from before the columns

    result = CliRunner().invoke(app, ["report", "--results", str(path.parent), "--markdown"])
    assert result.exit_code == 0, result.stdout
    assert "### Disks: images/s beside what iostat showed" in result.stdout
    assert f"**{hdd}**" in result.stdout and "| 97.0 |" in result.stdout


def test_rows_without_storage_columns_have_no_section() -> None:
    rows = run_rows(NEWEST, stages=("read", "format"))
    assert disk_tables(pd.DataFrame(rows)) == []
