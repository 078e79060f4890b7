"""A case's ``threads=1`` pins every pool the row names, pyarrow's included, and restores them."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from imgbench.formats.libs import parquet as parquet_format
from imgbench.measure.threads import thread_limits


def test_one_thread_pins_pyarrow_and_restores_it() -> None:
    before = pa.cpu_count()
    with thread_limits(1):
        assert pa.cpu_count() == 1
        assert os.environ["OMP_NUM_THREADS"] == "1"
        assert not parquet_format._use_threads()  # a one-thread case reads in the caller
    assert pa.cpu_count() == before


def test_no_limit_leaves_pyarrow_alone() -> None:
    before = pa.cpu_count()
    with thread_limits(None):
        assert pa.cpu_count() == before


def test_row_groups_read_the_same_records_with_and_without_threads(tmp_path: Path) -> None:
    path = tmp_path / "x.parquet"
    images = [bytes([i]) * (100 + i) for i in range(10)]
    table = pa.table({"image": pa.array(images, pa.binary()), "label": list(range(10))})
    pq.write_table(table, path, row_group_size=4)
    groups = parquet_format.RowGroups([pq.ParquetFile(path)])
    threaded = [groups[i] for i in range(10)]
    with thread_limits(1):
        single = [groups[i] for i in range(10)]
        iterated = list(groups)
    assert threaded == single == iterated == [(images[i], i) for i in range(10)]
    groups.close()
