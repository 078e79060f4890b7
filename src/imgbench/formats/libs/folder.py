"""Image folder, the baseline: one file per image, ``CLASS/NNNNNNNN.EXT``, plus an index."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import cast

from imgbench.formats.base import BaseReader, FormatMeta, Record, WritePlan, check_index

EXTENSIONS = {"jpeg": ".jpg", "png": ".png", "webp": ".webp", "bmp": ".bmp", "tiff": ".tif"}
INDEX = "index.tsv"


def write(out: Path, records: Iterable[Record], plan: WritePlan) -> None:
    made: set[str] = set()
    with (out / INDEX).open("w", encoding="utf-8") as index:
        for record in records:
            folder = f"{record.label:04d}" if record.label >= 0 else "unlabelled"
            if folder not in made:
                (out / folder).mkdir(exist_ok=True)
                made.add(folder)
            rel = f"{folder}/{record.index:08d}{EXTENSIONS.get(record.codec, '.img')}"
            (out / rel).write_bytes(cast(bytes, record.payload))  # a bytes format: file bytes
            index.write(f"{rel}\t{record.label}\n")


class Reader(BaseReader):
    def __init__(self, path: Path, meta: FormatMeta) -> None:
        super().__init__(path, meta)
        self._files: list[str] = []
        self._labels: list[int] = []
        with (self.path / INDEX).open(encoding="utf-8") as index:
            for line in index:
                rel, label = line.rstrip("\n").split("\t")
                self._files.append(str(self.path / rel))
                self._labels.append(int(label))

    def __len__(self) -> int:
        return len(self._files)

    def __getitem__(self, index: int) -> tuple[bytes, int]:
        index = check_index(index, len(self._files))
        with open(self._files[index], "rb") as handle:
            return handle.read(), self._labels[index]
