"""NumPy files read through ``np.load(mmap_mode="r")``: pre-decoded arrays, or packed bytes.

* decoded: ``images.npy`` of shape (N, S, S, 3) uint8, what people write after resizing;
* packed: ``data.npy`` (all image bytes, uint8) + ``offsets.npy`` (int64, N + 1).

All stream (images, labels and offsets alike): the writer reserves a fixed-size ``.npy`` header,
appends records, then rewrites the header with the final shape, so memory stays flat however many
images there are.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from pathlib import Path
from typing import BinaryIO, cast

import numpy as np

from imgbench.formats.base import BaseReader, FormatMeta, Record, WritePlan, check_index

HEADER_BYTES = 128  # a multiple of 64, as the .npy format asks; room for any shape


def npy_header(shape: tuple[int, ...], dtype: np.dtype) -> bytes:
    """A version 1.0 ``.npy`` header padded to exactly ``HEADER_BYTES``."""
    text = repr(
        {"descr": np.lib.format.dtype_to_descr(dtype), "fortran_order": False, "shape": shape}
    ).encode("latin1")
    prefix = b"\x93NUMPY\x01\x00"
    length = HEADER_BYTES - len(prefix) - 2
    if len(text) + 1 > length:
        raise ValueError(f"npy header for shape {shape} does not fit in {HEADER_BYTES} bytes")
    return prefix + struct.pack("<H", length) + text + b" " * (length - len(text) - 1) + b"\n"


def _open_stream(path: Path) -> BinaryIO:
    handle = path.open("wb")
    handle.write(b"\0" * HEADER_BYTES)
    return handle


def _finish(handle: BinaryIO, shape: tuple[int, ...], dtype: np.dtype) -> None:
    handle.seek(0)
    handle.write(npy_header(shape, dtype))
    handle.close()


class NpyWriter:
    """Appends rows to a ``.npy`` file whose header (with the final row count) is written last.

    The same bytes as ``np.save`` of the whole array, except for the header's padding; memory is
    one row.
    """

    def __init__(self, path: Path, dtype: type | np.dtype, row_shape: tuple[int, ...] = ()) -> None:
        self.dtype = np.dtype(dtype)
        self.row_shape = row_shape
        self.count = 0
        self._handle = _open_stream(path)

    def append(self, row: object) -> None:
        value = np.ascontiguousarray(row, dtype=self.dtype)
        self._handle.write(value.data)
        self.count += 1

    def close(self) -> None:
        _finish(self._handle, (self.count, *self.row_shape), self.dtype)


def write(out: Path, records: Iterable[Record], plan: WritePlan) -> None:
    # Every array is streamed to its file: memory does not grow with the number of records.
    labels = NpyWriter(out / "labels.npy", np.int32)
    u8 = np.dtype(np.uint8)
    if plan.stores == "array":
        assert plan.array_shape is not None
        images = NpyWriter(out / "images.npy", u8, plan.array_shape)
        for record in records:
            payload = record.payload
            assert isinstance(payload, np.ndarray) and payload.shape == plan.array_shape
            images.append(payload)
            labels.append(record.label)
        images.close()
    else:
        offsets = NpyWriter(out / "offsets.npy", np.int64)
        offsets.append(0)
        end = 0
        handle = _open_stream(out / "data.npy")
        for record in records:
            handle.write(cast(bytes, record.payload))  # stores="bytes": the file's bytes
            end += len(record.payload)
            offsets.append(end)
            labels.append(record.label)
        _finish(handle, (end,), u8)
        offsets.close()
    labels.close()


class Reader(BaseReader):
    def __init__(self, path: Path, meta: FormatMeta) -> None:
        super().__init__(path, meta)
        self._labels = np.load(self.path / "labels.npy")
        self._array = meta.stores == "array"
        if self._array:
            self._data = np.load(self.path / "images.npy", mmap_mode="r")
            self._offsets = None
        else:
            self._data = np.load(self.path / "data.npy", mmap_mode="r")
            self._offsets = np.load(self.path / "offsets.npy")

    def __len__(self) -> int:
        return len(self._labels)

    def __getitem__(self, index: int) -> tuple[bytes | np.ndarray, int]:
        index = check_index(index, len(self._labels))
        if self._offsets is None:
            payload: bytes | np.ndarray = np.array(self._data[index])  # a copy touches the pages
        else:
            payload = self._data[self._offsets[index] : self._offsets[index + 1]].tobytes()
        return payload, int(self._labels[index])

    def close(self) -> None:
        mapping = getattr(self._data, "_mmap", None)
        self._data = None
        if mapping is not None:
            mapping.close()
