"""HDF5 (h5py): variable-length uint8 records, or a fixed-size (N, S, S, 3) uint8 array.

Labels are a separate int32 dataset, read whole when the file is opened (as people do). Records
are written in blocks; datasets grow as records arrive and are trimmed to the final count.
Sequential iteration reads blocks of records per call, random access one record.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

import h5py
import numpy as np

from imgbench.formats.base import BaseReader, FormatMeta, Record, WritePlan, batched, check_index

FILE = "data.h5"
BLOCK = 64  # records per write and per sequential read


def write(out: Path, records: Iterable[Record], plan: WritePlan) -> None:
    with h5py.File(out / FILE, "w") as handle:
        if plan.stores == "array":
            assert plan.array_shape is not None
            images = handle.create_dataset(
                "images",
                shape=(0, *plan.array_shape),
                maxshape=(None, *plan.array_shape),
                chunks=(1, *plan.array_shape),
                dtype=np.uint8,
            )
        else:
            images = handle.create_dataset(
                "images",
                shape=(0,),
                maxshape=(None,),
                chunks=(BLOCK,),
                dtype=h5py.vlen_dtype(np.dtype(np.uint8)),
            )
        labels = handle.create_dataset("labels", shape=(0,), maxshape=(None,), dtype=np.int32)
        count = 0
        for batch in batched(records, BLOCK):
            end = count + len(batch)
            images.resize(end, axis=0)
            labels.resize(end, axis=0)
            if plan.stores == "array":
                images[count:end] = np.stack([r.payload for r in batch])
            else:
                column = np.empty(len(batch), dtype=object)
                column[:] = [np.frombuffer(r.payload, dtype=np.uint8) for r in batch]
                images[count:end] = column
            labels[count:end] = [r.label for r in batch]
            count = end


class Reader(BaseReader):
    def __init__(self, path: Path, meta: FormatMeta) -> None:
        super().__init__(path, meta)
        self._file = h5py.File(self.path / FILE, "r")
        self._images = self._file["images"]
        self._labels = self._file["labels"][:]
        self._array = meta.stores == "array"

    def __len__(self) -> int:
        return int(self._images.shape[0])

    def _payload(self, value: np.ndarray) -> bytes | np.ndarray:
        return value if self._array else value.tobytes()

    def __getitem__(self, index: int) -> tuple[bytes | np.ndarray, int]:
        index = check_index(index, len(self))
        return self._payload(self._images[index]), int(self._labels[index])

    def __iter__(self) -> Iterator[tuple[bytes | np.ndarray, int]]:
        for start in range(0, len(self), BLOCK):
            block = self._images[start : start + BLOCK]
            for offset, value in enumerate(block):
                yield self._payload(value), int(self._labels[start + offset])

    def close(self) -> None:
        self._file.close()
