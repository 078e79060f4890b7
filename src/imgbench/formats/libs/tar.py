"""Tar shards written and streamed with WebDataset; a sidecar index gives map-style access.

WebDataset itself is sequential: ``wds.WebDataset(shards)`` yields samples in shard order. For
random access the writer also records each image member's shard, offset and size (what
``wids`` builds on the fly), so ``reader[i]`` is one seek and one read.
"""

from __future__ import annotations

import tarfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

import numpy as np

from imgbench.formats.base import BaseReader, FormatMeta, Record, WritePlan, check_index
from imgbench.formats.libs.folder import EXTENSIONS
from imgbench.formats.libs.npy import NpyWriter

SHARD_BYTES = 256 * 1024 * 1024
SHARD_COUNT = 10_000
PATTERN = "shard-%06d.tar"
SHARDS = True  # --shards K: K tar files of about count / K records (ShardWriter's maxcount)


def write(out: Path, records: Iterable[Record], plan: WritePlan) -> None:
    import webdataset as wds

    # labels and the index are streamed to their .npy files (memory flat in the record count)
    labels = NpyWriter(out / "labels.npy", np.int32)
    with wds.ShardWriter(
        str(out / PATTERN),
        maxcount=plan.per_shard() if plan.shards > 1 else SHARD_COUNT,
        maxsize=SHARD_BYTES,
        verbose=0,
    ) as sink:
        for record in records:
            ext = EXTENSIONS.get(record.codec, ".img").lstrip(".")
            sink.write({"__key__": f"{record.index:08d}", ext: record.payload, "cls": record.label})
            labels.append(record.label)
    labels.close()
    index = NpyWriter(out / "index.npy", np.int64, (3,))
    for shard, path in enumerate(sorted(out.glob("shard-*.tar"))):
        for member in _members(path):
            if not member.name.endswith(".cls"):
                index.append((shard, member.offset_data, member.size))
    index.close()


def _members(path: Path) -> Iterator[tarfile.TarInfo]:
    """The members of one tar file, in order, without the list ``TarFile`` keeps of them all."""
    with tarfile.open(path) as archive:
        while (member := archive.next()) is not None:
            archive.members.clear()  # type: ignore[attr-defined]  # TarFile keeps every member
            yield member


class Reader(BaseReader):
    def __init__(self, path: Path, meta: FormatMeta) -> None:
        super().__init__(path, meta)
        self._shards = [str(p) for p in sorted(self.path.glob("shard-*.tar"))]
        self._index = np.load(self.path / "index.npy")
        self._labels = np.load(self.path / "labels.npy")
        self._handles: dict[int, BinaryIO] = {}

    def __len__(self) -> int:
        return len(self._index)

    def __getitem__(self, index: int) -> tuple[bytes, int]:
        index = check_index(index, len(self._index))
        shard, offset, size = (int(v) for v in self._index[index])
        handle = self._handles.get(shard)
        if handle is None:
            handle = self._handles[shard] = open(self._shards[shard], "rb")  # noqa: SIM115
        handle.seek(offset)
        return handle.read(size), int(self._labels[index])

    def __iter__(self) -> Iterator[tuple[bytes, int]]:
        import webdataset as wds

        dataset = wds.WebDataset(self._shards, shardshuffle=False, empty_check=False)
        for sample in dataset:
            ext = next(k for k in sample if not k.startswith("__") and k != "cls")
            yield sample[ext], int(sample["cls"])

    def close(self) -> None:
        for handle in self._handles.values():
            handle.close()
        self._handles.clear()
