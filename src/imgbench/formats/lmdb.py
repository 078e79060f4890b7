"""LMDB: one key per image (``%08d``), value = int32 label + the image bytes.

Written in transactions of a few hundred records; read through a read-only environment opened
with ``lock=False`` (the usual way for training data); iteration walks a cursor in key order.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import cast

import lmdb

from imgbench.formats.base import BaseReader, FormatMeta, Record, WritePlan, batched, check_index

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


def _key(index: int) -> bytes:
    return b"%08d" % index


def write(out: Path, records: Iterable[Record], plan: WritePlan) -> None:
    path = str(out / "data")
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
        self._env = lmdb.open(
            str(self.path / "data"), readonly=True, lock=False, subdir=True, meminit=False
        )
        self._txn = self._env.begin(buffers=True)
        self._count = self._env.stat()["entries"]

    def __len__(self) -> int:
        return self._count

    def __getitem__(self, index: int) -> tuple[bytes, int]:
        # every index below the count was written, so get() finds it (its type allows None)
        value = cast(memoryview, self._txn.get(_key(check_index(index, self._count))))
        return bytes(value[4:]), _LABEL.unpack_from(value)[0]

    def __iter__(self) -> Iterator[tuple[bytes, int]]:
        with self._env.begin(buffers=True) as txn:
            for _, value in txn.cursor():
                yield bytes(value[4:]), _LABEL.unpack_from(value)[0]

    def close(self) -> None:
        self._txn.abort()
        self._env.close()
