"""LitData chunks on S3 (the ``litdata`` format uploaded), streamed with ``StreamingDataset``.

``StreamingDataset("s3://bucket/prefix", storage_options=...)`` downloads ``index.json``, then
whole chunks into a local cache folder as records are asked for. The cache is emptied before
every timed round (:meth:`Reader.drop_cache`), so each round downloads what it reads. LitData's
own S3 client retries 1,000 times by default; here twice, so a lost server fails the case.

Two litdata 0.2.76 problems are worked around (see :func:`_allow_http` and ``__getitem__``):
its obstore chunk downloads refuse ``http://`` endpoints, and its byte-range reads of single
records return empty records for the chunks its own ``BinaryWriter`` writes.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from imgbench.formats.base import FormatMeta, check_index
from imgbench.formats.s3 import S3Reader
from imgbench.objectstore.server import S3Endpoint


class Reader(S3Reader):
    def __init__(
        self, endpoint: S3Endpoint, prefix: str, meta: FormatMeta, scratch: Path | None = None
    ) -> None:
        super().__init__(endpoint, prefix, meta, scratch)
        self._cache: str | None = None
        self._dataset: Any = None
        self._open()

    def _open(self) -> None:
        from botocore.config import Config
        from litdata import StreamingDataset

        if self.endpoint.scheme == "http":
            _allow_http()

        self._cache = tempfile.mkdtemp(prefix="litdata-cache-", dir=self.scratch)
        self._dataset = StreamingDataset(
            self.url(),
            cache_dir=self._cache,
            shuffle=False,
            storage_options={
                "endpoint_url": self.endpoint.url,
                "aws_access_key_id": self.endpoint.access_key,
                "aws_secret_access_key": self.endpoint.secret_key,
                "region_name": self.endpoint.region,
                "config": Config(retries={"max_attempts": 2, "mode": "standard"}),
            },
        )

    def __len__(self) -> int:
        return len(self._dataset)

    def __getitem__(self, index: int) -> tuple[bytes, int]:
        index = check_index(index, len(self._dataset))
        # a slice downloads the record's chunk into the cache; ``dataset[i]`` would fetch the
        # record's byte range alone, which litdata 0.2.76 cannot do for the Arrow-layout chunks
        # its own BinaryWriter writes (it returns an empty record: struct.error)
        (item,) = self._dataset[index : index + 1]
        return item["image"], int(item["label"])

    def __iter__(self) -> Iterator[tuple[bytes, int]]:
        for item in self._dataset:
            yield item["image"], int(item["label"])

    def drop_cache(self) -> None:
        self.close()
        self._open()

    def close(self) -> None:
        cache = getattr(self._dataset, "cache", None)
        loader = getattr(getattr(cache, "_reader", None), "_item_loader", None)
        if loader is not None and hasattr(loader, "close"):
            loader.close(0)  # unmap the chunk litdata keeps mapped, before its folder goes
        self._dataset = None
        if self._cache is not None:
            shutil.rmtree(self._cache, ignore_errors=True)
            self._cache = None


def _allow_http() -> None:
    """Let litdata's obstore chunk downloads use a plain-HTTP endpoint.

    With obstore installed, litdata 0.2.76 downloads chunks through obstore (``index.json``
    through boto3), building its ``S3Store`` from the boto3 client's endpoint but with fixed
    client options that lack ``allow_http``: every chunk GET to ``http://`` fails with "HTTP
    error: builder error". No public option reaches those client options, so the module's
    dict gets ``allow_http`` (it permits http URLs, nothing else changes).
    """
    from litdata.streaming import downloader

    options = getattr(downloader, "_OBSTORE_CLIENT_OPTIONS", None)
    if isinstance(options, dict) and "allow_http" not in options:
        downloader._OBSTORE_CLIENT_OPTIONS = {**options, "allow_http": True}
