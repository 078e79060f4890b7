"""The S3 storage of the format stage: a built store uploaded to a bucket, read back from it.

A store on S3 is the local build (:func:`imgbench.formats.base.build_format`) uploaded as it
is, one object per file, under a prefix: what people do with ``aws s3 sync`` after writing
shards. Its completion marker and key list (``_imgbench/``) are uploaded last, so a prefix
without a marker is an incomplete upload, which :func:`open_s3` refuses, as ``open_format``
refuses a folder without one.

Each S3 reader is one adapter module (``Reader(S3Reader)``) with one entry in
``imgbench.formats.registry.S3_FORMATS``; it reads with its library's own S3 client (boto3,
WebDataset over boto3 streams, LitData's ``StreamingDataset``, pyarrow's ``S3FileSystem``).

Uploads and their round trips are made once per session per (dataset, format, N, endpoint),
kept in the session's scratch folder like built formats, so worker processes share them.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from types import ModuleType
from typing import TYPE_CHECKING, Any

from imgbench.formats.base import (
    KEYS,
    MARKER,
    META_DIR,
    BaseReader,
    FormatError,
    FormatMeta,
    format_files,
    parse_keys,
    parse_meta,
)
from imgbench.library import LibrarySpec

if TYPE_CHECKING:
    from imgbench.datasets.manifest import ImageEntry
    from imgbench.formats.roundtrip import RoundTrip
    from imgbench.objectstore.server import S3Endpoint

UPLOAD_THREADS = 8  # concurrent PUTs, as `aws s3 sync` (10) or s5cmd do


@dataclass(frozen=True, kw_only=True)
class S3FormatSpec(LibrarySpec):
    """An S3 reader of a format: ``name`` is the local format it uploads (its registry name)."""

    name: str
    module: str  # module with ``class Reader(S3Reader)``, imported only when needed
    client: str  # what talks S3, for the rows: "boto3", "pyarrow.fs", ...

    @property
    def key(self) -> str:
        return self.name

    def load(self) -> ModuleType:
        return importlib.import_module(self.module)

    def version(self) -> str | None:
        return None


class S3Reader(BaseReader):
    """Defaults for S3 readers: the endpoint, the store's prefix, and a boto3 client."""

    def __init__(
        self, endpoint: S3Endpoint, prefix: str, meta: FormatMeta, scratch: Path | None = None
    ) -> None:
        super().__init__(Path(PurePosixPath(prefix)), meta)
        self.endpoint = endpoint
        self.prefix = prefix.strip("/")
        self.scratch = scratch  # a local folder for a library's own cache (litdata's chunks)
        self._client: Any = None

    @property
    def client(self) -> Any:
        if self._client is None:
            self._client = self.endpoint.client()
        return self._client

    def key(self, rel: str) -> str:
        return f"{self.prefix}/{rel}"

    def url(self, rel: str = "") -> str:
        return f"s3://{self.endpoint.bucket}/{self.key(rel) if rel else self.prefix}"

    def get(self, rel: str, start: int | None = None, size: int | None = None) -> bytes:
        """One GET of an object (a byte range of it when ``start``/``size`` are given)."""
        args: dict[str, Any] = {"Bucket": self.endpoint.bucket, "Key": self.key(rel)}
        if start is not None and size is not None:
            args["Range"] = f"bytes={start}-{start + size - 1}"
        data: bytes = self.client.get_object(**args)["Body"].read()
        return data

    def drop_cache(self) -> None:
        """Forget what the reader keeps locally (e.g. downloaded chunks): called before every
        timed round, so each round reads from the object store."""


# -- upload --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Upload:
    """A store uploaded under ``prefix``: how long it took and what the bucket holds."""

    name: str  # the format
    url: str  # the endpoint it went to
    prefix: str
    seconds: float  # every PUT, marker included, wall time
    stored_bytes: int  # sum of the objects' sizes (imgbench's bookkeeping excluded)
    objects: int  # the store's objects (bookkeeping excluded)
    meta: FormatMeta


def _store_files(path: Path) -> tuple[list[Path], list[Path]]:
    """(the format's files, imgbench's bookkeeping: key list, then the marker last)."""
    meta = [path / META_DIR / KEYS, path / META_DIR / MARKER]
    return format_files(path), meta


def put_store(
    endpoint: S3Endpoint, path: Path, prefix: str, threads: int = UPLOAD_THREADS
) -> float:
    """Upload the built store at ``path`` under ``prefix``; returns the seconds it took. Its
    files go with ``threads`` concurrent PUTs (boto3's ``upload_file``: multipart above 8 MB),
    then its key list, then its completion marker."""
    client = endpoint.client(timeout_s=60.0)
    prefix = prefix.strip("/")
    files, bookkeeping = _store_files(path)

    def put(file: Path) -> None:
        key = f"{prefix}/{file.relative_to(path).as_posix()}"
        client.upload_file(str(file), endpoint.bucket, key)

    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=max(1, threads)) as pool:
        for _ in pool.map(put, files):
            pass
    for file in bookkeeping:  # the marker last: a prefix without it is incomplete
        put(file)
    return time.perf_counter() - start


def upload_store(endpoint: S3Endpoint, path: Path, prefix: str, meta: FormatMeta) -> Upload:
    """:func:`put_store`, then what the bucket holds under ``prefix``."""
    seconds = put_store(endpoint, path, prefix)
    stored, count = stored_bytes(endpoint, prefix)
    return Upload(meta.name, endpoint.url, prefix.strip("/"), seconds, stored, count, meta)


def _objects(endpoint: S3Endpoint, prefix: str) -> Iterator[dict[str, Any]]:
    client = endpoint.client()
    paginator = client.get_paginator("list_objects_v2")
    for page in paginator.paginate(Bucket=endpoint.bucket, Prefix=prefix.strip("/") + "/"):
        yield from page.get("Contents", [])


def stored_bytes(endpoint: S3Endpoint, prefix: str) -> tuple[int, int]:
    """(bytes, objects) the bucket holds under ``prefix``, imgbench's bookkeeping excluded."""
    skip = f"{prefix.strip('/')}/{META_DIR}/"
    sizes = [int(o["Size"]) for o in _objects(endpoint, prefix) if not o["Key"].startswith(skip)]
    return sum(sizes), len(sizes)


def delete_prefix(endpoint: S3Endpoint, prefix: str) -> int:
    """Delete every object under ``prefix``; returns how many there were."""
    keys = [o["Key"] for o in _objects(endpoint, prefix)]
    client = endpoint.client()
    for at in range(0, len(keys), 1000):
        batch = [{"Key": k} for k in keys[at : at + 1000]]
        client.delete_objects(Bucket=endpoint.bucket, Delete={"Objects": batch, "Quiet": True})
    return len(keys)


# -- open and check ------------------------------------------------------------------------------
def _text(endpoint: S3Endpoint, key: str) -> str | None:
    client = endpoint.client()
    try:
        body = client.get_object(Bucket=endpoint.bucket, Key=key)["Body"].read()
    except client.exceptions.NoSuchKey:
        return None
    return str(body.decode("utf-8"))


def read_meta_s3(endpoint: S3Endpoint, prefix: str) -> FormatMeta:
    """The completion marker of a store on S3; FormatError when it is missing or unreadable."""
    key = f"{prefix.strip('/')}/{META_DIR}/{MARKER}"
    text = _text(endpoint, key)
    where = f"s3://{endpoint.bucket}/{key}"
    if text is None:
        raise FormatError(f"{where}: not a complete imgbench store (no completion marker)")
    return parse_meta(text, where)


def read_keys_s3(endpoint: S3Endpoint, prefix: str) -> list[tuple[str, int]]:
    text = _text(endpoint, f"{prefix.strip('/')}/{META_DIR}/{KEYS}")
    return parse_keys(text or "")


def open_s3(
    spec: S3FormatSpec,
    endpoint: S3Endpoint,
    prefix: str,
    scratch: Path | None = None,
    meta: FormatMeta | None = None,
) -> S3Reader:
    """Open a complete store uploaded by :func:`upload_store` for ``spec``."""
    meta = meta or read_meta_s3(endpoint, prefix)
    if meta.name != spec.name:
        raise FormatError(
            f"s3://{endpoint.bucket}/{prefix}: holds {meta.name!r}, not {spec.name!r}"
        )
    reader: S3Reader = spec.load().Reader(endpoint, prefix, meta, scratch)
    if len(reader) != meta.count:
        reader.close()
        raise FormatError(f"{reader.url()}: {len(reader)} records, the marker says {meta.count}")
    return reader


def s3_round_trip(
    spec: S3FormatSpec,
    endpoint: S3Endpoint,
    prefix: str,
    root: Path,
    entries: Sequence[ImageEntry],
    skipped: Sequence[str] = (),
    scratch: Path | None = None,
) -> RoundTrip:
    """Every record of the store on S3 read back through ``spec``'s reader, by index and in
    order, against its source file (:func:`imgbench.formats.roundtrip.check_reader`)."""
    from imgbench.formats.roundtrip import check_reader

    return check_reader(
        spec.name,
        "bytes",
        lambda: read_keys_s3(endpoint, prefix),
        lambda: open_s3(spec, endpoint, prefix, scratch),
        root,
        entries,
        skipped,
    )
