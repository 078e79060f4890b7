"""One object per image on S3 (the ``folder`` format uploaded), read with boto3.

The index (``index.tsv``: object name and label per record) is read once at open; each record
is one ``GetObject``. Sequential and shuffled reads differ only in the order of the requests.
"""

from __future__ import annotations

from pathlib import Path

from imgbench.formats.base import FormatMeta, check_index
from imgbench.formats.libs.folder import INDEX
from imgbench.formats.s3 import S3Reader
from imgbench.objectstore.server import S3Endpoint


class Reader(S3Reader):
    def __init__(
        self, endpoint: S3Endpoint, prefix: str, meta: FormatMeta, scratch: Path | None = None
    ) -> None:
        super().__init__(endpoint, prefix, meta, scratch)
        self._names: list[str] = []
        self._labels: list[int] = []
        for line in self.get(INDEX).decode("utf-8").split("\n"):
            if line:
                name, label = line.split("\t")
                self._names.append(name)
                self._labels.append(int(label))

    def __len__(self) -> int:
        return len(self._names)

    def __getitem__(self, index: int) -> tuple[bytes, int]:
        index = check_index(index, len(self._names))
        return self.get(self._names[index]), self._labels[index]
