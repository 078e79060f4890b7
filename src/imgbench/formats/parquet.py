"""Parquet (pyarrow): a binary image column and an int32 label column, tuned for images.

Tuning: no compression (JPEG/PNG bytes do not compress), no dictionary, no statistics on the
binary column, and small row groups (``ROWS_PER_GROUP``; Hugging Face ``datasets`` uses 100
for images), because a random read must read a whole row group. Random access reads the
record's row group every time (no cache: the figure does not depend on how many images a round
touches); sequential iteration reads one row group per batch.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from imgbench.formats.base import BaseReader, FormatMeta, Record, WritePlan, batched, check_index

FILE = "data.parquet"
ROWS_PER_GROUP = 32
SCHEMA = pa.schema([("label", pa.int32()), ("image", pa.binary())])


def write(out: Path, records: Iterable[Record], plan: WritePlan) -> None:
    with pq.ParquetWriter(
        out / FILE,
        SCHEMA,
        compression="none",
        use_dictionary=False,
        write_statistics=["label"],
    ) as writer:
        for batch in batched(records, ROWS_PER_GROUP):
            table = pa.table(
                {
                    "label": pa.array([r.label for r in batch], pa.int32()),
                    "image": pa.array([r.payload for r in batch], pa.binary()),
                },
                schema=SCHEMA,
            )
            writer.write_table(table, row_group_size=ROWS_PER_GROUP)


def _use_threads() -> bool:
    """pyarrow decodes a row group's columns on its CPU pool; a pool of one thread (a case's
    ``threads=1``) would only hand the work over and back, so read in the caller. That also makes
    the read's instruction count deterministic (it moved 0.3-1.9% between identical passes)."""
    return pa.cpu_count() > 1


class RowGroups:
    """Records of an open ``ParquetFile``, by row group: what the local and S3 readers share."""

    def __init__(self, file: pq.ParquetFile) -> None:
        self._file = file
        groups = self._file.metadata.num_row_groups
        self._starts = [0]
        for g in range(groups):
            self._starts.append(self._starts[-1] + self._file.metadata.row_group(g).num_rows)

    def __len__(self) -> int:
        return self._starts[-1]

    def __getitem__(self, index: int) -> tuple[bytes, int]:
        index = check_index(index, len(self))
        group = bisect.bisect_right(self._starts, index) - 1
        table = self._file.read_row_group(group, use_threads=_use_threads())
        offset = index - self._starts[group]
        return table["image"][offset].as_py(), table["label"][offset].as_py()

    def __iter__(self) -> Iterator[tuple[bytes, int]]:
        for batch in self._file.iter_batches(batch_size=ROWS_PER_GROUP, use_threads=_use_threads()):
            yield from zip(batch["image"].to_pylist(), batch["label"].to_pylist(), strict=True)

    def close(self) -> None:
        self._file.close()


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
        self._groups = RowGroups(pq.ParquetFile(self.path / FILE))

    def close(self) -> None:
        self._groups.close()
