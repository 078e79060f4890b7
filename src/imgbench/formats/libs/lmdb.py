"""LMDB: one key per image (``%08d``), value = int32 label + the image bytes.

Written in transactions of a few hundred records; read through a read-only environment opened
with ``lock=False`` (the usual way for training data); iteration walks a cursor in key order.

With ``--shards K`` the records go to K environments, ``data-00000``, ... (consecutive runs,
keys still the global index): K files a loader's workers can split, as sharded LMDB exports do.
"""

from __future__ import annotations

import bisect
import struct
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import cast

import lmdb

from imgbench.formats.base import (
    BaseReader,
    FormatMeta,
    Record,
    WritePlan,
    batched,
    check_index,
    shard_streams,
)

# The map starts at 1 GiB and doubles when full (LMDB's own pattern): reserving 1 TiB of address
# space up front failed under valgrind (Invalid argument) and under a ulimit -v.
MAP_SIZE = 1 << 30
TXN_RECORDS = 256
# LMDB reads the database through its memory map while writing, and every page it touches stays
# in this process's RSS until the map goes: +53 MiB of peak RSS from 10k to 100k tiny images.
# Reopening the environment every 64 transactions (16,384 records) kept that to +10.8% for
# ImageNet-sized images (file-backed pages +21%: a 10k build never reopened, a 100k one held up
# to 16,384 records' pages); every 16 (4,096 records) bounds both sizes alike.
REOPEN_TXNS = 16
_LABEL = struct.Struct("<i")
SHARDS = True  # base.check_packing: --shards K writes K environments


def _key(index: int) -> bytes:
    return b"%08d" % index


def shard_dirs(path: Path) -> list[Path]:
    """The store's environments in record order: one ``data`` or the shards."""
    if (path / "data").is_dir():
        return [path / "data"]
    return sorted(p for p in path.glob("data-*") if p.is_dir())


def write(out: Path, records: Iterable[Record], plan: WritePlan) -> None:
    if plan.shards <= 1:
        _write_env(out / "data", records)
        return
    for number, shard in enumerate(shard_streams(records, plan.per_shard())):
        _write_env(out / f"data-{number:05d}", shard)


def _write_env(where: Path, records: Iterable[Record]) -> None:
    path = str(where)
    env = lmdb.open(path, map_size=MAP_SIZE, subdir=True, sync=False, lock=True)
    try:
        for number, batch in enumerate(batched(records, TXN_RECORDS), 1):
            while True:
                try:
                    with env.begin(write=True) as txn:
                        for record in batch:
                            txn.put(_key(record.index), _LABEL.pack(record.label) + record.payload)
                    break
                except lmdb.MapFullError:  # the transaction was aborted: grow, write it again
                    env.set_mapsize(env.info()["map_size"] * 2)
            if number % REOPEN_TXNS == 0:  # unmap the pages LMDB touched (see REOPEN_TXNS)
                size = env.info()["map_size"]
                env.close()
                env = lmdb.open(path, map_size=size, subdir=True, sync=False, lock=True)
        env.sync(True)
    finally:
        env.close()


class Reader(BaseReader):
    def __init__(self, path: Path, meta: FormatMeta) -> None:
        super().__init__(path, meta)
        self._envs = [
            lmdb.open(str(where), readonly=True, lock=False, subdir=True, meminit=False)
            for where in shard_dirs(self.path)
        ]
        self._txns = [env.begin(buffers=True) for env in self._envs]
        self._starts = [0]  # the global index of each shard's first record
        for env in self._envs:
            self._starts.append(self._starts[-1] + env.stat()["entries"])
        self._count = self._starts[-1]

    def __len__(self) -> int:
        return self._count

    def __getitem__(self, index: int) -> tuple[bytes, int]:
        index = check_index(index, self._count)
        # one environment (the usual store) skips the search: reads take microseconds
        shard = 0 if len(self._txns) == 1 else bisect.bisect_right(self._starts, index) - 1
        txn = self._txns[shard]
        # every index below the count was written, so get() finds it (its type allows None)
        value = cast(memoryview, txn.get(_key(index)))
        return bytes(value[4:]), _LABEL.unpack_from(value)[0]

    def __iter__(self) -> Iterator[tuple[bytes, int]]:
        for env in self._envs:
            with env.begin(buffers=True) as txn:
                for _, value in txn.cursor():
                    yield bytes(value[4:]), _LABEL.unpack_from(value)[0]

    def close(self) -> None:
        for txn in self._txns:
            txn.abort()
        for env in self._envs:
            env.close()
