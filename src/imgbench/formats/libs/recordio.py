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

Written with shards (``imgbench dataset convert --shards K``, im2rec's ``--chunks``), the store
holds ``data-00000.rec`` + ``data-00000.idx``, ...: each pair a complete indexed RecordIO file
that ``mx.recordio.MXIndexedRecordIO`` opens alone; keys are the records' global indexes.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO, TextIO, cast

from imgbench.formats.base import (
    BaseReader,
    FormatMeta,
    Record,
    WritePlan,
    check_index,
    shard_streams,
)

REC = "data.rec"
IDX = "data.idx"
SHARDS = True  # base.check_packing: this writer splits the records into --shards pairs
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


def shard_pair(index: int) -> tuple[str, str]:
    return f"data-{index:05d}.rec", f"data-{index:05d}.idx"


def pairs(path: Path) -> list[tuple[Path, Path]]:
    """The store's (.rec, .idx) files in record order: one ``data.rec`` or the shards."""
    if (path / REC).is_file():
        return [(path / REC, path / IDX)]
    return [(rec, rec.with_suffix(".idx")) for rec in sorted(path.glob("data-*.rec"))]


def write(out: Path, records: Iterable[Record], plan: WritePlan) -> None:
    if plan.shards <= 1:
        with (out / REC).open("wb") as rec, (out / IDX).open("w", encoding="ascii") as idx:
            for record in records:
                _append(rec, idx, record)
        return
    for number, batch in enumerate(shard_streams(records, plan.per_shard())):
        rec_name, idx_name = shard_pair(number)
        with (
            (out / rec_name).open("wb") as rec,
            (out / idx_name).open("w", encoding="ascii") as idx,
        ):
            for record in batch:
                _append(rec, idx, record)


def _append(rec: BinaryIO, idx: TextIO, record: Record) -> None:
    idx.write(f"{record.index}\t{rec.tell()}\n")
    payload = cast(bytes, record.payload)  # a bytes format gets the file's bytes
    rec.write(encode_record(pack(record.label, record.index, payload)))


class Reader(BaseReader):
    def __init__(self, path: Path, meta: FormatMeta) -> None:
        super().__init__(path, meta)
        self._files = pairs(self.path)
        self._offsets: list[tuple[int, int]] = []  # (shard, offset) per record
        for shard, (_, idx_path) in enumerate(self._files):
            with idx_path.open(encoding="ascii") as idx:
                for line in idx:
                    self._offsets.append((shard, int(line.split("\t")[1])))
        self._handles: dict[int, BinaryIO] = {}

    def __len__(self) -> int:
        return len(self._offsets)

    def __getitem__(self, index: int) -> tuple[bytes, int]:
        shard, offset = self._offsets[check_index(index, len(self._offsets))]
        handle = self._handles.get(shard)
        if handle is None:
            handle = self._handles[shard] = open(self._files[shard][0], "rb")  # noqa: SIM115
        handle.seek(offset)
        data = read_record(handle)
        assert data is not None
        label, image = unpack(data)
        return image, int(label)

    def __iter__(self) -> Iterator[tuple[bytes, int]]:
        for rec_path, _ in self._files:
            with open(rec_path, "rb", buffering=1 << 20) as handle:
                while (data := read_record(handle)) is not None:
                    label, image = unpack(data)
                    yield image, int(label)

    def close(self) -> None:
        for handle in self._handles.values():
            handle.close()
        self._handles.clear()
