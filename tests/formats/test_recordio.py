"""MXNet RecordIO layout: framing, the IRHeader, and magic words inside the data."""

from __future__ import annotations

import io
import struct
from pathlib import Path

import pytest

from imgbench.formats.libs.recordio import (
    IR_HEADER,
    MAGIC,
    encode_record,
    pack,
    read_record,
    unpack,
)

MAGIC_LE = struct.pack("<I", MAGIC)


def _parts(framed: bytes) -> int:
    """Number of framed parts, walking the headers."""
    parts = offset = 0
    while offset < len(framed):
        magic, lrecord = struct.unpack_from("<II", framed, offset)
        assert magic == MAGIC
        offset += 8 + (((lrecord & ((1 << 29) - 1)) + 3) & ~3)
        parts += 1
    return parts


def test_plain_record_layout() -> None:
    framed = encode_record(b"abcde")
    assert framed[:4] == b"\x0a\x23\xd7\xce"  # kMagic 0xced7230a, little-endian
    (lrecord,) = struct.unpack_from("<I", framed, 4)
    assert lrecord >> 29 == 0 and lrecord & ((1 << 29) - 1) == 5
    assert framed[8:13] == b"abcde" and framed[13:] == b"\0\0\0"  # padded to 4 bytes
    assert read_record(io.BytesIO(framed)) == b"abcde"


@pytest.mark.parametrize(
    "data",
    [
        b"xxxx" + MAGIC_LE + b"yyyy",  # aligned: split into two parts
        MAGIC_LE + b"tail",  # at the very start
        b"ab" + MAGIC_LE + b"cd",  # unaligned: stays one part
        b"1234" + MAGIC_LE + MAGIC_LE + b"12345",  # two in a row, odd tail
        b"1234" + MAGIC_LE,  # at the end
    ],
)
def test_magic_inside_data_round_trips(data: bytes) -> None:
    framed = encode_record(data)
    assert len(framed) % 4 == 0
    aligned = [i for i in range(0, len(data) - len(data) % 4, 4) if data[i : i + 4] == MAGIC_LE]
    assert _parts(framed) == 1 + len(aligned)  # every aligned magic became a part boundary
    stream = io.BytesIO(framed + encode_record(b"next"))
    assert read_record(stream) == data
    assert read_record(stream) == b"next"
    assert read_record(stream) is None


def test_image_record_header() -> None:
    data = pack(7, 42, b"\xff\xd8jpeg")
    flag, label, record_id, id2 = IR_HEADER.unpack_from(data)
    assert (flag, label, record_id, id2) == (0, 7.0, 42, 0)
    assert IR_HEADER.size == 24
    assert unpack(data) == (7.0, b"\xff\xd8jpeg")


def test_idx_file_lists_offsets(photo_manifest, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from imgbench.formats.base import build_format
    from imgbench.formats.registry import get_format

    report = build_format(
        get_format("recordio"), photo_manifest.root, photo_manifest.entries, tmp_path / "r"
    )
    lines = (report.path / "data.idx").read_text().splitlines()
    assert len(lines) == len(photo_manifest.entries)
    rec = (report.path / "data.rec").read_bytes()
    for line in lines:
        key, offset = line.split("\t")
        assert rec[int(offset) : int(offset) + 4] == MAGIC_LE
        stream = io.BytesIO(rec)
        stream.seek(int(offset))
        _, image = unpack(read_record(stream))  # type: ignore[arg-type]
        entry = photo_manifest.entries[int(key)]
        assert image == (photo_manifest.root / entry.path).read_bytes()
