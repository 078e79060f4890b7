"""The SeaweedFS server: ready, credentials enforced, crashes named, nothing left behind."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import tempfile
from pathlib import Path

import psutil
import pytest

from imgbench.objectstore.server import (
    START_ATTEMPTS,
    EndpointError,
    S3Endpoint,
    S3Server,
    ServerLostError,
    ServerStartError,
    ServerUnavailableError,
    SessionServer,
    check_endpoint,
    free_ports,
    start_server,
    weed_missing,
)
from tests.objectstore.conftest import assert_gone, needs_weed, weed_processes


@needs_weed
def test_ready_server_round_trips_an_object(s3_server: S3Server) -> None:
    endpoint = s3_server.endpoint
    assert endpoint.host == "127.0.0.1"
    assert s3_server.alive()
    check_endpoint(endpoint)  # raises on any fault
    client = endpoint.client()
    client.put_object(Bucket=endpoint.bucket, Key="a/b.bin", Body=b"\x00\x01" * 1000)
    body = client.get_object(Bucket=endpoint.bucket, Key="a/b.bin")["Body"].read()
    assert body == b"\x00\x01" * 1000
    client.delete_object(Bucket=endpoint.bucket, Key="a/b.bin")
    # every listener is on 127.0.0.1 only, on the ports the server was given
    listening = {
        c.laddr.port
        for c in psutil.Process(s3_server.pid).net_connections(kind="tcp")
        if c.status == psutil.CONN_LISTEN
    }
    assert listening <= set(s3_server.ports.values())
    assert {c.laddr.ip for c in psutil.Process(s3_server.pid).net_connections(kind="tcp")} == {
        "127.0.0.1"
    }
    assert "secret" not in repr(endpoint) and endpoint.secret_key not in repr(endpoint)


@needs_weed
def test_three_faults_are_one_line_each_naming_the_problem(s3_server: S3Server) -> None:
    good = s3_server.endpoint
    (closed,) = free_ports(1)
    cases = {
        "unreachable": good.with_url(f"http://127.0.0.1:{closed}"),
        "credentials": S3Endpoint(good.url, good.access_key, "wrong-secret", good.bucket),
        "bucket": good.with_bucket("no-such-bucket"),
    }
    lines = {}
    for kind, endpoint in cases.items():
        with pytest.raises(EndpointError) as info:
            check_endpoint(endpoint, timeout_s=3)
        assert info.value.kind == kind
        lines[kind] = str(info.value)
        assert "\n" not in lines[kind]
    assert lines["unreachable"] == f"S3 endpoint http://127.0.0.1:{closed} unreachable: " + (
        "connection refused or timed out"
    )
    assert "rejected the credentials" in lines["credentials"]
    assert good.access_key in lines["credentials"]
    assert "SignatureDoesNotMatch" in lines["credentials"]
    assert "bucket 'no-such-bucket' does not exist" in lines["bucket"]
    # a wrong access key too, and anonymous access is refused
    wrong_key = S3Endpoint(good.url, "nobody", good.secret_key, good.bucket)
    with pytest.raises(EndpointError, match="InvalidAccessKeyId") as info:
        check_endpoint(wrong_key)
    assert info.value.kind == "credentials"
    import urllib.error
    import urllib.request

    with pytest.raises(urllib.error.HTTPError) as http:
        urllib.request.urlopen(f"{good.url}/{good.bucket}/", timeout=5)
    assert http.value.code == 403


@needs_weed
def test_an_error_in_the_block_stops_the_server_and_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under a TMPDIR too long for a Unix socket in its data folder (SeaweedFS would exit with
    ``bind: invalid argument``), its sockets go to a folder of their own, removed with it.
    (The normal end of a ``with`` block is checked by the shared server's fixture.)"""
    long_tmp = tmp_path / ("t" * max(1, 100 - len(str(tmp_path))))
    long_tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(long_tmp))
    with pytest.raises(RuntimeError, match="boom"), start_server("abc") as server:
        assert server.data_dir.parent == long_tmp
        assert server.socket_dir is not None and server.socket_dir.parent == Path("/tmp")
        assert {p.name for p in server.socket_dir.iterdir()} == {"filer.sock", "s3.sock"}
        pid, ports = server.pid, dict(server.ports)
        assert psutil.Process(pid).name() == "weed"
        assert [p.pid for p in weed_processes(str(server.data_dir))] == [pid]
        assert psutil.Process(pid).children(recursive=True) == []
        assert os.getpgid(pid) == pid  # its own process group
        check_endpoint(server.endpoint)
        raise RuntimeError("boom")
    assert_gone(server)
    # (another test's server, started since on a port this one freed, may hold it by now)
    held_ports, held_paths = _held_by_running_servers()
    for port in set(ports.values()) - held_ports:  # every port is free again
        with socket.socket() as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(("127.0.0.1", port))
    leftovers = [
        p
        for p in Path("/tmp").glob("seaweedfs-*.sock")
        if any(p.name.endswith(f"-{port}.sock") for port in ports.values())
        and str(p) not in held_paths
    ]
    assert leftovers == []


def _held_by_running_servers() -> tuple[set[int], set[str]]:
    """The TCP ports and Unix socket paths that running `weed` processes hold."""
    ports: set[int] = set()
    paths: set[str] = set()
    for proc in weed_processes(""):
        with contextlib.suppress(psutil.Error):
            ports |= {c.laddr.port for c in proc.net_connections(kind="tcp") if c.laddr}
            paths |= {c.laddr for c in proc.net_connections(kind="unix") if c.laddr}
    return ports, paths


def test_crash_during_start_up_is_a_clear_error(tmp_path: Path) -> None:
    fake = tmp_path / "weed"
    starts = tmp_path / "starts"
    fake.write_text(
        f"#!/bin/sh\necho x >> {starts}\n"
        "echo 'F1123 fatal: cannot bind the master port' >&2\n"
        "echo 'goroutine 1 [running]:' >&2\necho '  server.go:395 +0x1210' >&2\nexit 3\n"
    )
    fake.chmod(0o755)
    with pytest.raises(ServerStartError) as info:
        S3Server.start("abc", binary=str(fake), timeout_s=10)
    # started again on new ports (a port taken between choosing and binding), then given up
    assert len(starts.read_text().split()) == START_ATTEMPTS
    message = str(info.value)
    assert "exited with code 3 during start-up" in message
    assert "cannot bind the master port" in message  # glog's fatal line, not the panic's stack
    assert "\n" not in message
    assert list(tmp_path.parent.glob("imgbench-s3-*")) == []


def test_a_server_that_never_answers_is_stopped_and_named(tmp_path: Path) -> None:
    fake = tmp_path / "weed"
    fake.write_text("#!/bin/sh\necho 'starting'\nexec sleep 60\n")
    fake.chmod(0o755)
    with pytest.raises(ServerStartError, match=r"did not answer S3 at http://127\.0\.0\.1:\d+"):
        S3Server.start("abc", binary=str(fake), timeout_s=1.5)
    assert [
        p for p in psutil.process_iter(["cmdline"]) if str(fake) in (p.info["cmdline"] or [])
    ] == []


def test_missing_weed_is_unavailable_with_the_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("IMGBENCH_WEED", "/nonexistent/weed")
    reason = weed_missing()
    assert reason is not None and "/nonexistent/weed" in reason
    with pytest.raises(ServerUnavailableError, match="not an executable `weed`"):
        S3Server.start("abc")
    session = SessionServer()
    assert session.unavailable() == reason
    with pytest.raises(ServerUnavailableError):
        session.endpoint()
    with pytest.raises(ServerUnavailableError):  # remembered: not tried again
        session.endpoint()


@needs_weed
def test_session_server_starts_once_and_reports_a_lost_server() -> None:
    session = SessionServer("lost-bucket")
    try:
        first = session.endpoint()
        assert session.endpoint() == first  # one server for the session
        server = session.server
        assert server is not None
        os.kill(server.pid, signal.SIGKILL)
        server.process.wait(timeout=10)
        with pytest.raises(ServerLostError) as info:
            session.endpoint()
        message = str(info.value)
        assert f"weed pid {server.pid}" in message and "was killed by SIGKILL" in message
        with pytest.raises(ServerLostError):  # every later S3 case gets the same reason
            session.check()
    finally:
        session.stop()
    assert_gone(server)
    session.stop()  # idempotent


@needs_weed
def test_a_session_uses_the_endpoint_the_variable_names_and_starts_none(
    s3_server: S3Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    """$IMGBENCH_S3_ENDPOINT: the session's S3 cases use that endpoint, checked once, and no
    `weed` is started or needed; a malformed value or a wrong endpoint is named in one line."""
    from imgbench.objectstore.server import ENDPOINT_ENV, endpoint_json

    monkeypatch.setenv(ENDPOINT_ENV, endpoint_json(s3_server.endpoint))
    monkeypatch.setenv("IMGBENCH_WEED", "/nonexistent/weed")  # not needed: none is started
    owner = SessionServer()
    assert owner.unavailable() is None
    assert owner.endpoint() == s3_server.endpoint
    assert owner.endpoint() == s3_server.endpoint  # checked once, the same each time
    assert owner.server is None  # nothing started (a start would have failed: no `weed`)
    assert owner.describe() == f"S3 endpoint at {s3_server.endpoint.url} (${ENDPOINT_ENV})"
    owner.check()
    owner.stop()  # not ours: it stays
    assert s3_server.alive()

    wrong = S3Endpoint(s3_server.endpoint.url, "nobody", "nothing", "imgbench-tests")
    monkeypatch.setenv(ENDPOINT_ENV, endpoint_json(wrong))
    owner = SessionServer()
    with pytest.raises(EndpointError, match="rejected the credentials"):
        owner.endpoint()
    with pytest.raises(EndpointError, match="rejected the credentials"):
        owner.endpoint()  # not retried: every S3 case gets the same reason
    monkeypatch.setenv(ENDPOINT_ENV, '{"url": "http://127.0.0.1:1"}')
    with pytest.raises(ValueError, match=r"\$IMGBENCH_S3_ENDPOINT: want JSON with url"):
        SessionServer().endpoint()
