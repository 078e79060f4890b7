"""Parquet (pyarrow): a binary image column and an int32 label column, tuned for images.

Tuning: no compression (JPEG/PNG bytes do not compress), no dictionary, no statistics on the
binary column, and small row groups (``ROWS_PER_GROUP``; Hugging Face ``datasets`` uses 100
for images), because a random read must read a whole row group. Random access reads the
record's row group every time (no cache: the figure does not depend on how many images a round
touches); sequential iteration reads one row group per batch.

Sharded, as Hugging Face ``datasets`` shards its Parquet exports: at most ``SHARD_ROWS`` records
per file (``data-00000.parquet``, ...). A Parquet writer keeps every row group's metadata until
it writes the footer, so one file for the whole set held memory that grew with the number of
images: peak RSS of ``imgbench dataset convert --to parquet`` rose 193 -> 215 MiB (+11.5%) from
10,000 to 100,000 ImageNet-sized JPEGs (glibc's heap: 5.6 MiB more in use, 7.2 MiB more free
between the metadata's reallocations, 4.4 MiB more mapped). A store written before the shards (one
``data.parquet``) is still read.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from imgbench.formats.base import (
    BaseReader,
    FormatMeta,
    Record,
    WritePlan,
    batched,
    check_index,
    shard_streams,
)

FILE = "data.parquet"  # the layout before the shards: one file
ROWS_PER_GROUP = 32
SHARD_ROWS = 8192  # records per file: 256 row groups, about 650 MB of ImageNet-sized JPEGs
SHARDS = True  # --shards K: K files of about count / K records instead of SHARD_ROWS each
SCHEMA = pa.schema([("label", pa.int32()), ("image", pa.binary())])


def shard_name(index: int) -> str:
    return f"data-{index:05d}.parquet"


def shard_names(count: int) -> list[str]:
    """The files of a store of ``count`` records, in record order."""
    return [shard_name(i) for i in range(max(1, math.ceil(count / SHARD_ROWS)))]


def _writer(path: Path) -> pq.ParquetWriter:
    return pq.ParquetWriter(
        path,
        SCHEMA,
        compression="none",
        use_dictionary=False,
        write_statistics=["label"],
    )


def write(out: Path, records: Iterable[Record], plan: WritePlan) -> None:
    per_shard = plan.per_shard() if plan.shards > 1 else SHARD_ROWS
    for number, shard in enumerate(shard_streams(records, per_shard)):
        writer = _writer(out / shard_name(number))
        try:  # closing frees the metadata of its row groups
            for batch in batched(shard, ROWS_PER_GROUP):
                table = pa.table(
                    {
                        "label": pa.array([r.label for r in batch], pa.int32()),
                        "image": pa.array([r.payload for r in batch], pa.binary()),
                    },
                    schema=SCHEMA,
                )
                writer.write_table(table, row_group_size=ROWS_PER_GROUP)
        finally:
            writer.close()


def local_files(path: Path, meta: FormatMeta) -> list[Path]:
    """The store's files: one ``data.parquet`` (stores written before the shards) or the shards."""
    single = path / FILE
    if single.is_file():
        return [single]
    if dict(meta.packing).get("shards", 1) > 1:  # --shards: their own count (data-*.parquet)
        return sorted(path.glob("data-*.parquet"))
    return [path / name for name in shard_names(meta.count)]


def _use_threads() -> bool:
    """pyarrow decodes a row group's columns on its CPU pool; a pool of one thread (a case's
    ``threads=1``) would only hand the work over and back, so read in the caller. That also makes
    the read's instruction count deterministic (it moved 0.3-1.9% between identical passes)."""
    return pa.cpu_count() > 1


class RowGroups:
    """Records of open ``ParquetFile`` shards, by row group: what the local and S3 readers share."""

    def __init__(self, files: Sequence[pq.ParquetFile]) -> None:
        self._files = list(files)
        self._groups = [(f, g) for f in self._files for g in range(f.metadata.num_row_groups)]
        self._starts = [0]
        for file, g in self._groups:
            self._starts.append(self._starts[-1] + file.metadata.row_group(g).num_rows)

    def __len__(self) -> int:
        return self._starts[-1]

    def __getitem__(self, index: int) -> tuple[bytes, int]:
        index = check_index(index, len(self))
        at = bisect.bisect_right(self._starts, index) - 1
        file, group = self._groups[at]
        table = file.read_row_group(group, use_threads=_use_threads())
        offset = index - self._starts[at]
        return table["image"][offset].as_py(), table["label"][offset].as_py()

    def __iter__(self) -> Iterator[tuple[bytes, int]]:
        for file in self._files:
            for batch in file.iter_batches(batch_size=ROWS_PER_GROUP, use_threads=_use_threads()):
                yield from zip(batch["image"].to_pylist(), batch["label"].to_pylist(), strict=True)

    def close(self) -> None:
        for file in self._files:
            file.close()


class OverRowGroups:
    """A reader's records through its :class:`RowGroups` (on a local file or an S3 object)."""

    _groups: RowGroups

    def __len__(self) -> int:
        return len(self._groups)

    def __getitem__(self, index: int) -> tuple[bytes, int]:
        return self._groups[index]

    def __iter__(self) -> Iterator[tuple[bytes, int]]:
        return iter(self._groups)


class Reader(OverRowGroups, BaseReader):
    def __init__(self, path: Path, meta: FormatMeta) -> None:
        super().__init__(path, meta)
        self._groups = RowGroups([pq.ParquetFile(f) for f in local_files(self.path, meta)])

    def close(self) -> None:
        self._groups.close()
