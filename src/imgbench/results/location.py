"""Where results live: a local folder, or a prefix in an S3 bucket (``s3://bucket/prefix``).

Every command that reads or writes results files goes through :func:`results_location`, so the
rest of imgbench never tests for ``s3://`` itself. A folder is written atomically
(``imgbench.atomic``); an S3 object is written by one PUT, which S3 makes visible whole or not at
all, so a reader never sees half a file in either place.

S3 is reached through pyarrow's S3 filesystem (the AWS SDK for C++), with the standard AWS
variables: ``AWS_ENDPOINT_URL`` (or ``AWS_ENDPOINT_URL_S3``) for any S3-compatible server,
``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY`` (or the SDK's other sources: profile, instance
role), ``AWS_REGION`` / ``AWS_DEFAULT_REGION``. A problem is one :class:`ResultsLocationError` line
that says which: the endpoint cannot be reached, the credentials are refused, or the bucket does
not exist.
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol
from urllib.parse import urlparse

import pyarrow as pa
import pyarrow.parquet as pq

from imgbench.atomic import atomic_file
from imgbench.errors import one_line

if TYPE_CHECKING:
    from pyarrow.fs import S3FileSystem

S3_SCHEME = "s3://"
CONNECT_TIMEOUT_S = 3.0  # an unreachable endpoint is named in seconds, not after minutes
REQUEST_TIMEOUT_S = 60.0


class ResultsLocationError(ValueError):
    """The results location cannot be used; the message is one line naming the cause."""


@dataclass(frozen=True)
class FileEntry:
    """One results file: its name in the location, when it last changed, its size."""

    name: str
    mtime_ns: int
    size: int


@dataclass(frozen=True)
class ObjectPath:
    """A results file in a bucket, as ``load_results`` lists it (a local file is a Path)."""

    url: str

    @property
    def name(self) -> str:
        return self.url.rsplit("/", 1)[-1]

    def __str__(self) -> str:
        return self.url


class ResultsLocation(Protocol):
    def __str__(self) -> str: ...

    @property
    def remote(self) -> bool: ...

    def check(self) -> None:
        """Raise ResultsLocationError when the location cannot be reached (S3: bucket, keys)."""

    def files(self) -> list[FileEntry]:
        """The ``*.parquet`` files directly in the location, by name (hidden ones left out)."""

    def read_table(self, name: str) -> pa.Table: ...

    def write_table(self, name: str, table: pa.Table) -> None:
        """Write ``table`` as parquet under ``name``, atomically."""

    def path_of(self, name: str) -> Path | ObjectPath: ...


def is_remote(spec: str | Path) -> bool:
    return str(spec).startswith(S3_SCHEME)


def results_location(spec: str | Path) -> ResultsLocation:
    """A folder path, or ``s3://bucket[/prefix]``."""
    if is_remote(spec):
        return S3Location.from_url(str(spec))
    return LocalLocation(Path(spec))


def parquet_bytes(table: pa.Table) -> bytes:
    buffer = io.BytesIO()
    pq.write_table(table, buffer, compression="zstd")
    return buffer.getvalue()


@dataclass(frozen=True)
class LocalLocation:
    folder: Path

    def __str__(self) -> str:
        return str(self.folder)

    @property
    def remote(self) -> bool:
        return False

    def check(self) -> None:
        if self.folder.exists() and not self.folder.is_dir():
            raise ResultsLocationError(f"results location {self.folder} is a file, not a folder")

    def files(self) -> list[FileEntry]:
        if not self.folder.is_dir():
            return []
        entries = []
        for path in sorted(self.folder.glob("*.parquet")):
            if path.name.startswith("."):
                continue
            try:
                stat = path.stat()
            except FileNotFoundError:  # replaced or removed while listing
                continue
            entries.append(FileEntry(path.name, stat.st_mtime_ns, stat.st_size))
        return entries

    def read_table(self, name: str) -> pa.Table:
        return pq.read_table(self.folder / name)

    def write_table(self, name: str, table: pa.Table) -> None:
        with atomic_file(self.folder / name) as handle:
            pq.write_table(table, handle, compression="zstd")

    def path_of(self, name: str) -> Path:
        return self.folder / name


def _endpoint() -> str | None:
    return os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL") or None


def _region() -> str:
    return os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"


@dataclass(frozen=True)
class S3Location:
    bucket: str
    prefix: str  # no leading or trailing slash; "" for the bucket's top
    endpoint: str | None  # scheme://host:port, or None for AWS itself

    @classmethod
    def from_url(cls, url: str) -> S3Location:
        parsed = urlparse(url)
        bucket = parsed.netloc
        if not bucket:
            raise ResultsLocationError(f"{url}: no bucket (expected s3://BUCKET[/PREFIX])")
        return cls(bucket=bucket, prefix=parsed.path.strip("/"), endpoint=_endpoint())

    def __str__(self) -> str:
        return f"{S3_SCHEME}{self.bucket}" + (f"/{self.prefix}" if self.prefix else "")

    @property
    def remote(self) -> bool:
        return True

    def _where(self) -> str:
        return f"{self} (endpoint {self.endpoint or 'AWS'})"

    def filesystem(self) -> S3FileSystem:
        from pyarrow.fs import AwsStandardS3RetryStrategy, S3FileSystem

        kwargs: dict[str, object] = {}
        if self.endpoint:
            parsed = urlparse(self.endpoint)
            kwargs["endpoint_override"] = parsed.netloc or parsed.path
            kwargs["scheme"] = parsed.scheme or "https"
        if os.environ.get("AWS_ACCESS_KEY_ID") and os.environ.get("AWS_SECRET_ACCESS_KEY"):
            kwargs["access_key"] = os.environ["AWS_ACCESS_KEY_ID"]
            kwargs["secret_key"] = os.environ["AWS_SECRET_ACCESS_KEY"]
            if os.environ.get("AWS_SESSION_TOKEN"):
                kwargs["session_token"] = os.environ["AWS_SESSION_TOKEN"]
        return S3FileSystem(
            region=_region(),
            connect_timeout=CONNECT_TIMEOUT_S,
            request_timeout=REQUEST_TIMEOUT_S,
            retry_strategy=AwsStandardS3RetryStrategy(max_attempts=2),
            **kwargs,
        )

    def _key(self, name: str) -> str:
        return f"{self.bucket}/{self.prefix}/{name}" if self.prefix else f"{self.bucket}/{name}"

    def error(self, exc: BaseException) -> ResultsLocationError:
        """One line that says which of unreachable, refused credentials or no bucket it is."""
        text = one_line(exc)
        lowered = text.lower()
        if any(
            s in lowered
            for s in (
                "network_connection",
                "couldn't connect",
                "could not connect",
                "connection refused",
                "curlcode: 7",
                "curlcode: 6",
                "curlcode: 28",
                "timed out",
                "timeout",
                "could not resolve",
            )
        ):
            return ResultsLocationError(
                f"results location {self}: cannot reach the S3 endpoint "
                f"{self.endpoint or 'AWS'} (set AWS_ENDPOINT_URL to the server's address)"
            )
        if any(
            s in lowered
            for s in (
                "invalidaccesskeyid",
                "signaturedoesnotmatch",
                "access_denied",
                "accessdenied",
                "access denied",
                "forbidden",
                "invalid_access_key_id",
                "signature_does_not_match",
                "http response code: 403",
                "credentials",
            )
        ):
            return ResultsLocationError(
                f"results location {self}: the S3 endpoint {self.endpoint or 'AWS'} refused the "
                "credentials (check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)"
            )
        if "nosuchbucket" in lowered or "no_such_bucket" in lowered or "bucket" in lowered:
            return ResultsLocationError(
                f"results location {self}: bucket {self.bucket!r} does not exist on "
                f"{self.endpoint or 'AWS'}"
            )
        return ResultsLocationError(f"results location {self._where()}: {text}")

    def check(self) -> None:
        from pyarrow.fs import FileType

        try:
            info = self.filesystem().get_file_info(self.bucket)
        except (OSError, pa.ArrowException) as exc:
            raise self.error(exc) from None
        if info.type == FileType.NotFound:
            raise ResultsLocationError(
                f"results location {self}: bucket {self.bucket!r} does not exist on "
                f"{self.endpoint or 'AWS'}"
            )

    def files(self) -> list[FileEntry]:
        from pyarrow.fs import FileSelector, FileType

        self.check()  # a missing bucket lists as empty otherwise
        base = f"{self.bucket}/{self.prefix}" if self.prefix else self.bucket
        try:
            infos = self.filesystem().get_file_info(FileSelector(base, allow_not_found=True))
        except (OSError, pa.ArrowException) as exc:
            raise self.error(exc) from None
        entries = []
        for info in infos:
            if info.type != FileType.File or not info.base_name.endswith(".parquet"):
                continue
            if info.base_name.startswith("."):
                continue
            mtime = info.mtime_ns or 0
            entries.append(FileEntry(info.base_name, mtime, info.size or 0))
        return sorted(entries, key=lambda e: e.name)

    def read_table(self, name: str) -> pa.Table:
        try:
            with self.filesystem().open_input_file(self._key(name)) as handle:
                data = handle.read()
        except (OSError, pa.ArrowException) as exc:
            if isinstance(exc, FileNotFoundError):
                raise
            raise self.error(exc) from None
        return pq.read_table(pa.BufferReader(data))

    def write_table(self, name: str, table: pa.Table) -> None:
        data = parquet_bytes(table)
        try:
            # one PUT on close (the object appears whole, or not at all)
            with self.filesystem().open_output_stream(self._key(name)) as handle:
                handle.write(data)
        except (OSError, pa.ArrowException) as exc:
            raise self.error(exc) from None

    def path_of(self, name: str) -> ObjectPath:
        return ObjectPath(f"{self}/{name}")
