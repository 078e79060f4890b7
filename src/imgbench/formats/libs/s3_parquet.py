"""Parquet on S3 (the ``parquet`` format uploaded), read through pyarrow's ``S3FileSystem``.

Each shard is opened once (its footer: two ranged reads); random access reads the record's row
group (ranged GETs of its column chunks), sequential iteration reads one row group per batch,
exactly as the local reader does on its files.
"""

from __future__ import annotations

from pathlib import Path

from imgbench.formats.base import FormatMeta
from imgbench.formats.libs.parquet import FILE, OverRowGroups, RowGroups, shard_names
from imgbench.formats.s3 import S3Reader
from imgbench.objectstore.server import S3Endpoint


class Reader(OverRowGroups, S3Reader):
    def __init__(
        self, endpoint: S3Endpoint, prefix: str, meta: FormatMeta, scratch: Path | None = None
    ) -> None:
        import pyarrow.fs as pafs
        import pyarrow.parquet as pq

        super().__init__(endpoint, prefix, meta, scratch)
        fs = pafs.S3FileSystem(
            access_key=endpoint.access_key,
            secret_key=endpoint.secret_key,
            endpoint_override=f"{endpoint.host}:{endpoint.port}",
            scheme=endpoint.scheme,
            region=endpoint.region,
            connect_timeout=5,
            request_timeout=30,
            retry_strategy=pafs.AwsStandardS3RetryStrategy(max_attempts=2),
        )
        names = shard_names(meta.count)
        first = f"{endpoint.bucket}/{self.key(names[0])}"
        if fs.get_file_info(first).type == pafs.FileType.NotFound:
            names = [FILE]  # a store written before the shards
        self._inputs = [fs.open_input_file(f"{endpoint.bucket}/{self.key(n)}") for n in names]
        self._groups = RowGroups([pq.ParquetFile(handle) for handle in self._inputs])

    def close(self) -> None:
        self._groups.close()
        for handle in self._inputs:
            handle.close()
