"""Tar shards on S3 (the ``tar`` format uploaded), streamed with WebDataset.

Sequential: each shard is one streaming ``GetObject`` whose body WebDataset's own tar expander
and key grouper read as they arrive (``webdataset.tariterators``: what ``wds.WebDataset`` runs
on the streams its URL opener returns; boto3 opens them here, as S3 has no ``gopen`` scheme).
Random access: one ranged ``GetObject`` per image, at the offset the sidecar index records
(what ``wids`` does over HTTP).
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from imgbench.formats.base import FormatMeta, check_index
from imgbench.formats.s3 import S3Reader
from imgbench.objectstore.server import S3Endpoint


class Reader(S3Reader):
    def __init__(
        self, endpoint: S3Endpoint, prefix: str, meta: FormatMeta, scratch: Path | None = None
    ) -> None:
        super().__init__(endpoint, prefix, meta, scratch)
        self._index = np.load(io.BytesIO(self.get("index.npy")))
        self._labels = np.load(io.BytesIO(self.get("labels.npy")))
        shards = int(self._index[:, 0].max()) + 1 if len(self._index) else 0
        self._shards = [f"shard-{i:06d}.tar" for i in range(shards)]

    def __len__(self) -> int:
        return len(self._index)

    def __getitem__(self, index: int) -> tuple[bytes, int]:
        index = check_index(index, len(self._index))
        shard, offset, size = (int(v) for v in self._index[index])
        return self.get(self._shards[shard], offset, size), int(self._labels[index])

    def _streams(self) -> Iterator[dict[str, Any]]:
        for shard in self._shards:
            body = self.client.get_object(Bucket=self.endpoint.bucket, Key=self.key(shard))
            yield {"url": self.url(shard), "stream": body["Body"]}

    def __iter__(self) -> Iterator[tuple[bytes, int]]:
        from webdataset.tariterators import group_by_keys, tar_file_expander

        for sample in group_by_keys(tar_file_expander(self._streams())):
            ext = next(k for k in sample if not k.startswith("__") and k != "cls")
            yield sample[ext], int(sample["cls"])
