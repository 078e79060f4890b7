from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from imgbench.results.schema import COLUMNS, SCHEMA, SCHEMA_VERSION, empty_row, to_table
from imgbench.results.store import load_results, run_summary, write_rows


def _row(case: str, status: str = "ok") -> dict:
    row = empty_row()
    row.update(
        run_id="r1",
        created_utc=datetime(2026, 11, 22, tzinfo=UTC),
        stage="read",
        case_id=case,
        library="pillow",
        status=status,
        threads=1,
        samples_s=[0.01, 0.011, 0.012] if status == "ok" else [],
        images_per_round=16,
        images_per_s_median=1454.5 if status == "ok" else None,
        reason=None if status == "ok" else "why",
    )
    return row


def test_roundtrip_keeps_every_column_and_type(tmp_path: Path) -> None:
    path = tmp_path / "r1.parquet"
    write_rows([_row("a"), _row("b", "skipped"), _row("c", "failed")], path)
    table = pq.read_table(path)
    assert table.schema.equals(SCHEMA, check_metadata=False)
    assert table.schema.metadata[b"imgbench_schema_version"] == str(SCHEMA_VERSION).encode()
    frame = load_results(path).frame
    assert list(frame.columns) == COLUMNS
    assert frame.loc[0, "samples_s"].tolist() == [0.01, 0.011, 0.012]
    assert list(frame["status"]) == ["ok", "skipped", "failed"]
    assert (frame["schema_version"] == SCHEMA_VERSION).all()


def test_pandas_duckdb_polars_read_the_file(tmp_path: Path) -> None:
    path = tmp_path / "r1.parquet"
    write_rows([_row("a"), _row("b")], path)
    assert len(pd.read_parquet(path)) == 2
    assert duckdb.sql(f"select count(*) from read_parquet('{path}')").fetchall() == [(2,)]
    frame = pl.read_parquet(path)
    assert frame["samples_s"].dtype == pl.List(pl.Float64)
    assert frame.height == 2


def test_unknown_column_is_refused() -> None:
    row = _row("a")
    row["imagez_per_s"] = 1.0
    with pytest.raises(KeyError, match="imagez_per_s"):
        to_table([row])


def test_older_schema_files_load_with_missing_columns_null(tmp_path: Path) -> None:
    old = pa.table({"schema_version": [0], "run_id": ["old"], "case_id": ["x"], "status": ["ok"]})
    pq.write_table(old, tmp_path / "old.parquet")
    write_rows([_row("a")], tmp_path / "new.parquet")
    loaded = load_results(tmp_path)
    assert len(loaded.frame) == 2
    assert loaded.frame.loc[loaded.frame.run_id == "old", "images_per_s_median"].isna().all()


def test_corrupt_file_is_skipped_and_named(tmp_path: Path) -> None:
    write_rows([_row("a")], tmp_path / "good.parquet")
    (tmp_path / "broken.parquet").write_bytes(b"PAR1 this is not parquet")
    with pytest.warns(UserWarning, match="broken.parquet"):
        loaded = load_results(tmp_path)
    assert [p.name for p, _ in loaded.skipped] == ["broken.parquet"]
    assert len(loaded.frame) == 1


def test_run_summary_counts_statuses(tmp_path: Path) -> None:
    write_rows([_row("a"), _row("b", "skipped"), _row("c", "failed")], tmp_path / "r.parquet")
    summary = run_summary(load_results(tmp_path).frame)
    assert summary.loc[0, ["ok", "skipped", "failed"]].tolist() == [1, 1, 1]


def test_failed_write_leaves_previous_file_intact(tmp_path: Path) -> None:
    path = tmp_path / "r.parquet"
    write_rows([_row("a")], path)
    bad = _row("b")
    bad["threads"] = "not-an-int"
    with pytest.raises((pa.ArrowInvalid, pa.ArrowTypeError)):
        write_rows([_row("a"), bad], path)
    assert len(pq.read_table(path)) == 1
    assert [p.name for p in tmp_path.iterdir()] == ["r.parquet"]  # no temp file left behind
