"""MXNet RecordIO (``.rec`` + ``.idx``), written and read by hand with its documented layout.

MXNet 1.9.1 installs only beside numpy < 1.24 (the ``mxnet`` env, where the ``mxnet-recordio``
loader packs and reads with MXNet itself), but ``im2rec`` datasets are still around, so in the
main env imgbench writes the same bytes ``mx.recordio.MXIndexedRecordIO`` +
``mx.recordio.pack`` would (dmlc-core ``recordio.cc``):

* each record: ``uint32 magic 0xced7230a``, ``uint32 lrecord = cflag << 29 | length``, the data,
  zero padding to a multiple of 4 bytes;
* a 4-byte-aligned occurrence of the magic inside the data splits the record into parts
  (cflag 1 = first, 2 = middle, 3 = last; the magic word itself is dropped and restored by the
  reader), so a reader can always resynchronise on the magic;
* the data of an image record is an ``IRHeader`` (``<IfQQ``: flag, float label, id, id2)
  followed by the encoded image;
* the ``.idx`` file has one ``key\\toffset`` line per record.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO, cast

from imgbench.formats.base import BaseReader, FormatMeta, Record, WritePlan, check_index

REC = "data.rec"
IDX = "data.idx"
MAGIC = 0xCED7230A
_MAGIC_BYTES = struct.pack("<I", MAGIC)
_HEAD = struct.Struct("<II")
IR_HEADER = struct.Struct("<IfQQ")
_LENGTH_MASK = (1 << 29) - 1


def _lrecord(cflag: int, length: int) -> int:
    if length > _LENGTH_MASK:
        raise ValueError(f"RecordIO part of {length} bytes exceeds the 2**29 - 1 limit")
    return (cflag << 29) | length


def encode_record(data: bytes) -> bytes:
    """The framed bytes of one record, split at aligned magic words like dmlc-core does."""
    parts = []
    start = 0
    position = data.find(_MAGIC_BYTES)
    while position != -1 and position + 4 <= len(data) - (len(data) % 4):
        if position % 4 == 0:
            cflag = 1 if start == 0 else 2
            parts.append(_HEAD.pack(MAGIC, _lrecord(cflag, position - start)))
            parts.append(data[start:position])
            start = position + 4
            position = data.find(_MAGIC_BYTES, start)
        else:
            position = data.find(_MAGIC_BYTES, position + 1)
    cflag = 3 if start else 0
    parts.append(_HEAD.pack(MAGIC, _lrecord(cflag, len(data) - start)))
    parts.append(data[start:])
    parts.append(b"\0" * (-len(data) % 4))
    return b"".join(parts)


def read_record(handle: BinaryIO) -> bytes | None:
    """The data of the next record at the handle's position; None at the end of the file."""
    chunks: list[bytes] = []
    while True:
        head = handle.read(8)
        if not head:
            if chunks:
                raise ValueError("RecordIO file ends inside a multi-part record")
            return None
        magic, lrecord = _HEAD.unpack(head)
        if magic != MAGIC:
            raise ValueError(f"bad RecordIO magic {magic:#x} at offset {handle.tell() - 8}")
        cflag, length = lrecord >> 29, lrecord & _LENGTH_MASK
        chunk = handle.read((length + 3) & ~3)[:length]
        if cflag in (0, 1):
            chunks = [chunk]
        else:
            chunks.extend((_MAGIC_BYTES, chunk))
        if cflag in (0, 3):
            return b"".join(chunks)


def pack(label: float, record_id: int, image: bytes) -> bytes:
    """``mx.recordio.pack(IRHeader(0, label, id, 0), image)``."""
    return IR_HEADER.pack(0, float(label), record_id, 0) + image


def unpack(data: bytes) -> tuple[float, bytes]:
    flag, label, _, _ = IR_HEADER.unpack_from(data)
    body = data[IR_HEADER.size :]
    if flag > 0:  # a vector label: flag floats before the image
        label = struct.unpack_from(f"<{flag}f", body)[0]
        body = body[4 * flag :]
    return label, body


def write(out: Path, records: Iterable[Record], plan: WritePlan) -> None:
    with (out / REC).open("wb") as rec, (out / IDX).open("w", encoding="ascii") as idx:
        for record in records:
            idx.write(f"{record.index}\t{rec.tell()}\n")
            payload = cast(bytes, record.payload)  # a bytes format gets the file's bytes
            rec.write(encode_record(pack(record.label, record.index, payload)))


class Reader(BaseReader):
    def __init__(self, path: Path, meta: FormatMeta) -> None:
        super().__init__(path, meta)
        self._offsets: list[int] = []
        with (self.path / IDX).open(encoding="ascii") as idx:
            for line in idx:
                self._offsets.append(int(line.split("\t")[1]))
        self._handle = open(self.path / REC, "rb")  # noqa: SIM115

    def __len__(self) -> int:
        return len(self._offsets)

    def __getitem__(self, index: int) -> tuple[bytes, int]:
        self._handle.seek(self._offsets[check_index(index, len(self._offsets))])
        data = read_record(self._handle)
        assert data is not None
        label, image = unpack(data)
        return image, int(label)

    def __iter__(self) -> Iterator[tuple[bytes, int]]:
        with open(self.path / REC, "rb", buffering=1 << 20) as handle:
            while (data := read_record(handle)) is not None:
                label, image = unpack(data)
                yield image, int(label)

    def close(self) -> None:
        self._handle.close()
