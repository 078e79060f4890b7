"""Mosaic Streaming shards on S3 (the ``mds`` format uploaded), streamed with ``StreamingDataset``.

``StreamingDataset(remote="s3://bucket/prefix", local=<cache folder>)`` downloads
``index.json`` when it opens, then whole shards into the local folder as records are asked for
(``dataset[i]`` downloads the record's shard; iteration's prepare thread downloads ahead).
Streaming builds its boto3 client itself, from the environment: ``S3_ENDPOINT_URL`` for the
endpoint and the standard ``AWS_*`` variables for credentials and region, which this reader sets
while it is open (and restores when it closes); ``AWS_MAX_ATTEMPTS=2`` so that a lost server
fails the case instead of being retried for minutes. The cache folder is a fresh one in the
case's scratch folder each time the reader opens, emptied before every timed round
(:meth:`Reader.drop_cache`) and removed when it closes. Runs in the ``mosaic`` environment.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from imgbench.formats.base import FormatMeta
from imgbench.formats.libs.mds import OverDataset, open_dataset, release
from imgbench.formats.s3 import S3Reader
from imgbench.objectstore.server import S3Endpoint


class Reader(OverDataset, S3Reader):
    def __init__(
        self, endpoint: S3Endpoint, prefix: str, meta: FormatMeta, scratch: Path | None = None
    ) -> None:
        super().__init__(endpoint, prefix, meta, scratch)
        self._saved_env: dict[str, str | None] | None = None
        self._cache: str | None = None
        self._dataset: Any = None
        self._open()

    def _environment(self) -> dict[str, str]:
        return {
            "S3_ENDPOINT_URL": self.endpoint.url,
            "AWS_ACCESS_KEY_ID": self.endpoint.access_key,
            "AWS_SECRET_ACCESS_KEY": self.endpoint.secret_key,
            "AWS_DEFAULT_REGION": self.endpoint.region,
            "AWS_MAX_ATTEMPTS": "2",
        }

    def _open(self) -> None:
        if self._saved_env is None:
            wanted = self._environment()
            self._saved_env = {key: os.environ.get(key) for key in wanted}
            os.environ.update(wanted)
        self._cache = tempfile.mkdtemp(prefix="mds-cache-", dir=self.scratch)
        self._dataset = open_dataset(self._cache, remote=self.url())

    def drop_cache(self) -> None:
        self._close_dataset()
        self._open()

    def _close_dataset(self) -> None:
        release(self._dataset)
        self._dataset = None
        if self._cache is not None:
            shutil.rmtree(self._cache, ignore_errors=True)
            self._cache = None

    def close(self) -> None:
        self._close_dataset()
        if self._saved_env is not None:
            for key, value in self._saved_env.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
            self._saved_env = None
