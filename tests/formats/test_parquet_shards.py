"""Parquet stores are sharded (a writer holds every row group's metadata until its footer), and
read back whole, in order, from the shards or from a store written as one file."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from imgbench.formats.base import FormatMeta, Record, WritePlan
from imgbench.formats.libs import parquet as parquet_format


def _records(n: int) -> list[Record]:
    return [Record(i, f"k{i}", i % 5, f"payload {i}".encode() * 3, "jpeg") for i in range(n)]


def _meta(count: int) -> FormatMeta:
    return FormatMeta("parquet", count, ("a",), "bytes", None, "", 0, 0)


@pytest.mark.parametrize("count", [1, 64, 65, 200])
def test_records_spread_over_shards_come_back_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, count: int
) -> None:
    monkeypatch.setattr(parquet_format, "SHARD_ROWS", 64)  # two row groups of 32 per file
    records = _records(count)
    parquet_format.write(tmp_path, iter(records), WritePlan(count_hint=count, stores="bytes"))
    files = sorted(p.name for p in tmp_path.glob("*.parquet"))
    assert files == parquet_format.shard_names(count)
    assert len(files) == -(-count // 64)
    assert all(pq.ParquetFile(tmp_path / f).metadata.num_rows <= 64 for f in files)
    reader = parquet_format.Reader(tmp_path, _meta(count))
    try:
        expected = [(r.payload, r.label) for r in records]
        assert list(reader) == expected  # sequential, across the shards
        for index in (0, count - 1, count // 2, min(count - 1, 64)):
            assert reader[index] == expected[index]  # random access, into the right shard
        with pytest.raises(IndexError):
            reader[count]
    finally:
        reader.close()


def test_a_store_written_as_one_file_is_still_read(tmp_path: Path) -> None:
    records = _records(40)
    parquet_format.write(tmp_path, iter(records), WritePlan(count_hint=40, stores="bytes"))
    (only,) = tmp_path.glob("*.parquet")
    only.rename(tmp_path / parquet_format.FILE)  # the layout before the shards
    reader = parquet_format.Reader(tmp_path, _meta(40))
    try:
        assert list(reader) == [(r.payload, r.label) for r in records]
        assert reader[39] == (records[39].payload, records[39].label)
    finally:
        reader.close()
