"""zarr 3: a variable-length bytes array, one record per inner chunk, grouped into shards.

Sharding keeps the file count low (one file per ``SHARD`` records) while a random read still
fetches one record through the shard index. zarr 3 warns that variable-length bytes are not in
its stable spec yet; the warning is silenced. Reads use slices (``a[i:i+1]``): an integer index
returns a fixed-width ``numpy.bytes_`` that drops trailing NUL bytes.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import cast

import numpy as np

from imgbench.formats.base import (
    BaseReader,
    FormatMeta,
    Record,
    WritePlan,
    batched,
    check_index,
    quiet_warnings,
)

SHARD = 256  # records per shard file (and per write / per sequential read)
LABEL_CHUNK = 65536  # labels per chunk file


def write(out: Path, records: Iterable[Record], plan: WritePlan) -> None:
    import zarr
    from zarr.dtype import VariableLengthBytes

    with quiet_warnings():
        images = zarr.create_array(
            out / "images.zarr",
            shape=(max(plan.count_hint, 1),),
            chunks=(1,),
            shards=(SHARD,),
            dtype=VariableLengthBytes(),
        )
        # labels are written batch by batch too (memory flat in the record count)
        labels = zarr.create_array(
            out / "labels.zarr",
            shape=(max(plan.count_hint, 1),),
            chunks=(LABEL_CHUNK,),
            dtype=np.int32,
        )
        count = 0
        for batch in batched(records, SHARD):
            column = np.empty(len(batch), dtype=object)
            column[:] = [r.payload for r in batch]
            images[count : count + len(batch)] = column
            labels[count : count + len(batch)] = np.asarray([r.label for r in batch], np.int32)
            count += len(batch)
        images.resize((count,))
        labels.resize((count,))


class Reader(BaseReader):
    def __init__(self, path: Path, meta: FormatMeta) -> None:
        import zarr

        super().__init__(path, meta)
        with quiet_warnings():
            self._images = zarr.open_array(self.path / "images.zarr", mode="r")
            # a whole-array slice is an ndarray (zarr types it as any array-like or scalar)
            self._labels = cast(np.ndarray, zarr.open_array(self.path / "labels.zarr", mode="r")[:])

    def __len__(self) -> int:
        return int(self._images.shape[0])

    def __getitem__(self, index: int) -> tuple[bytes, int]:
        index = check_index(index, len(self))
        with quiet_warnings():
            block = cast(np.ndarray, self._images[index : index + 1])  # a slice: an ndarray
        return block[0], int(self._labels[index])

    def __iter__(self) -> Iterator[tuple[bytes, int]]:
        for start in range(0, len(self), SHARD):
            with quiet_warnings():
                block = cast(np.ndarray, self._images[start : start + SHARD])  # a slice
            for offset, value in enumerate(block):
                yield value, int(self._labels[start + offset])
