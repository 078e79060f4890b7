"""TFRecord through the ``tfrecord`` package (no TensorFlow): one ``tf.train.Example`` per image.

Features: ``image`` (bytes) and ``label`` (int64). The package's ``create_index`` writes the
``.index`` file (offset and length of every record), which map-style access seeks with;
sequential iteration is the package's own ``tfrecord_loader``.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np

from imgbench.formats.base import (
    BaseReader,
    FormatMeta,
    Record,
    WritePlan,
    as_bytes,
    check_index,
)

FILE = "data.tfrecord"
INDEX = "data.index"
DESCRIPTION = {"image": "byte", "label": "int"}


def write(out: Path, records: Iterable[Record], plan: WritePlan) -> None:
    from tfrecord.tools.tfrecord2idx import create_index
    from tfrecord.writer import TFRecordWriter

    writer = TFRecordWriter(str(out / FILE))
    try:
        for record in records:
            writer.write({"image": (record.payload, "byte"), "label": (record.label, "int")})
    finally:
        writer.close()
    create_index(str(out / FILE), str(out / INDEX))


class Reader(BaseReader):
    def __init__(self, path: Path, meta: FormatMeta) -> None:
        from tfrecord import example_pb2

        super().__init__(path, meta)
        self._example = example_pb2.Example
        index = np.loadtxt(self.path / INDEX, dtype=np.int64, ndmin=2)
        self._offsets, self._lengths = index[:, 0], index[:, 1]
        self._handle = open(self.path / FILE, "rb")  # noqa: SIM115

    def __len__(self) -> int:
        return len(self._offsets)

    def __getitem__(self, index: int) -> tuple[bytes, int]:
        index = check_index(index, len(self._offsets))
        self._handle.seek(int(self._offsets[index]))
        framed = self._handle.read(int(self._lengths[index]))
        (length,) = struct.unpack_from("<Q", framed)
        example = self._example.FromString(framed[12 : 12 + length])
        feature = example.features.feature
        return feature["image"].bytes_list.value[0], int(feature["label"].int64_list.value[0])

    def __iter__(self) -> Iterator[tuple[bytes, int]]:
        from tfrecord.reader import tfrecord_loader

        for sample in tfrecord_loader(str(self.path / FILE), None, DESCRIPTION):
            yield as_bytes(sample["image"]), int(sample["label"][0])

    def close(self) -> None:
        self._handle.close()
