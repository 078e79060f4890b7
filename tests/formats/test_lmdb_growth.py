"""LMDB's map starts small and grows: a store larger than the first map is written whole."""

from __future__ import annotations

from pathlib import Path

import pytest

lmdb = pytest.importorskip("lmdb")

from imgbench.formats.base import Record, WritePlan  # noqa: E402
from imgbench.formats.libs import lmdb as lmdb_format  # noqa: E402


def test_a_store_larger_than_the_first_map_is_written_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lmdb_format, "MAP_SIZE", 64 * 1024)
    payloads = [bytes([i % 251]) * 20_000 for i in range(40)]  # 800 kB, 12x the first map
    records = [Record(i, f"k{i}", i % 3, p, "jpeg") for i, p in enumerate(payloads)]
    out = tmp_path / "store"
    (out / "data").mkdir(parents=True)
    lmdb_format.write(out, records, WritePlan(count_hint=len(records), stores="bytes"))
    env = lmdb.open(str(out / "data"), readonly=True, lock=False, subdir=True)
    with env.begin() as txn:
        assert env.stat()["entries"] == 40
        raw = txn.get(lmdb_format._key(39))
        assert raw is not None and raw[4:] == payloads[39]
    env.close()
