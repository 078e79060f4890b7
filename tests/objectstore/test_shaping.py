"""Network shaping: the shaped path has the round trip and bandwidth it claims, and leaves nothing.

A small line server of the test's own stands in for the S3 server: ``PING`` lines come back,
``BULK n`` sends n bytes, ``SINK n`` reads n bytes
and answers ``OK``. Round trips and rates are measured here independently of the figures
``shaped`` measures itself. Shapes with a bandwidth need root, ``ip`` and ``tc`` (skipped where
missing); latency alone runs anywhere.
"""

from __future__ import annotations

import http.server
import os
import shutil
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from imgbench.measure.errors import Skip
from imgbench.objectstore import shaping
from imgbench.objectstore.shaping import (
    SHAPES,
    UNSHAPED,
    NetworkShape,
    ShapingUnavailable,
    measured_fields,
    network_shape,
    shape_named,
    shaped,
    shaped_or_skip,
    unavailable_fields,
)

needs_netns = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("ip") is None or shutil.which("tc") is None,
    reason="bandwidth shaping needs root, ip and tc",
)


@pytest.fixture(scope="module")
def line_server() -> Iterator[tuple[str, int]]:
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    block = b"\0" * (1 << 20)

    def one(conn: socket.socket) -> None:
        with conn, conn.makefile("rb") as lines:
            try:
                for line in lines:
                    if line.startswith(b"BULK "):
                        left = int(line.split()[1])
                        while left > 0:
                            conn.sendall(block[: min(left, len(block))])
                            left -= min(left, len(block))
                    elif line.startswith(b"SINK "):
                        left = int(line.split()[1])
                        while left > 0:
                            left -= len(lines.read1(min(left, 1 << 20)))
                        conn.sendall(b"OK\n")
                    else:
                        conn.sendall(line)
            except OSError:
                pass

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=one, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield listener.getsockname()[:2]
    listener.close()


def _ping(sock: socket.socket) -> float:
    start = time.perf_counter()
    sock.sendall(b"PING\n")
    got = b""
    while not got.endswith(b"\n"):
        data = sock.recv(64)
        assert data, "connection closed"
        got += data
    assert got == b"PING\n"
    return (time.perf_counter() - start) * 1000.0


def rtt_ms(host: str, port: int, n: int = 7) -> float:
    """Median round trip of PING lines on one connection, after one untimed exchange."""
    with socket.create_connection((host, port), timeout=10) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        _ping(sock)
        return statistics.median(_ping(sock) for _ in range(n))


def bulk_mbit_s(host: str, port: int, nbytes: int) -> float:
    """Goodput (Mbit/s, 10**6) of an ``nbytes`` download, timed from the first to the last byte."""
    with socket.create_connection((host, port), timeout=30) as sock:
        _ping(sock)
        sock.sendall(f"BULK {nbytes}\n".encode())
        first = sock.recv(1 << 20)
        start, got = time.perf_counter(), len(first)
        while got < nbytes:
            data = sock.recv(1 << 20)
            assert data, "connection closed early"
            got += len(data)
        return (got - len(first)) * 8 / 1e6 / (time.perf_counter() - start)


def upload_mbit_s(host: str, port: int, nbytes: int) -> float:
    """Goodput (Mbit/s) of an ``nbytes`` upload, until the server says it has read them all."""
    with socket.create_connection((host, port), timeout=30) as sock:
        _ping(sock)
        start = time.perf_counter()
        sock.sendall(f"SINK {nbytes}\n".encode())
        sock.sendall(b"\0" * nbytes)
        assert sock.recv(16) == b"OK\n"
        return nbytes * 8 / 1e6 / (time.perf_counter() - start)


def relay_processes() -> list[psutil.Process]:
    return [
        child
        for child in psutil.Process().children(recursive=True)
        if any("_relay.py" in part for part in child.cmdline())
    ]


@pytest.fixture(autouse=True)
def nothing_left_behind() -> Iterator[None]:
    yield
    assert shaping.leftovers() == [], "a namespace or veth link outlived its context"
    assert relay_processes() == [], "a relay process outlived its context"


def test_parameter_table() -> None:
    names = [shape.name for shape in SHAPES]
    assert names == [
        "rtt0ms-unlimited",
        "rtt0ms-1gbit",
        "rtt0ms-100mbit",
        "rtt5ms-unlimited",
        "rtt5ms-1gbit",
        "rtt5ms-100mbit",
        "rtt50ms-unlimited",
        "rtt50ms-1gbit",
        "rtt50ms-100mbit",
    ]
    assert UNSHAPED.unshaped and UNSHAPED is SHAPES[0]
    for shape in SHAPES:
        assert shape_named(shape.name) == shape
    assert shape_named("rtt20ms-250mbit") == NetworkShape("rtt20ms-250mbit", 20.0, 250)
    assert network_shape(50, 100).params() == {
        "network_shaping": "rtt50ms-100mbit",
        "network_rtt_target_ms": 50.0,
        "network_rate_mbit": 100,
    }
    with pytest.raises(ValueError):
        shape_named("fast")
    assert set(unavailable_fields(UNSHAPED)) == {
        "network_shaping",
        "network_rtt_ms",
        "network_rtt_direct_ms",
        "network_relay_added_ms",
        "network_how",
    }


def test_unshaped_is_the_server_itself(line_server: tuple[str, int]) -> None:
    with shaped(*line_server, UNSHAPED) as endpoint:
        assert (endpoint.host, endpoint.port, endpoint.how) == (*line_server, "direct")
        assert endpoint.measured_rtt_ms < 2
        assert rtt_ms(endpoint.host, endpoint.port) < 2
        assert bulk_mbit_s(endpoint.host, endpoint.port, 50_000_000) > 1500
        fields = measured_fields(endpoint)
        assert fields["network_shaping"] == "rtt0ms-unlimited"
        assert fields["network_rtt_ms"] == round(endpoint.measured_rtt_ms, 3)


def test_relay_alone_adds_little_and_carries_http() -> None:
    """The relay with no delay: its own cost, and an HTTP exchange through it is unchanged."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = self.path.encode() * 1000
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        with shaped("127.0.0.1", server.server_address[1], UNSHAPED, force_relay=True) as ep:
            assert ep.how == "relay"
            assert ep.relay_added_delay_ms < 2
            with urllib.request.urlopen(f"http://{ep.host}:{ep.port}/obj-7", timeout=10) as r:
                assert r.read() == b"/obj-7" * 1000
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize(("rtt", "low", "high"), [(5, 4.5, 10), (50, 45, 80)])
def test_round_trip_is_the_shape(
    line_server: tuple[str, int], rtt: float, low: float, high: float
) -> None:
    with shaped(*line_server, network_shape(rtt, None), probes=5) as endpoint:
        assert endpoint.how == "relay"
        assert low <= endpoint.measured_rtt_ms <= high
        assert 0 <= endpoint.relay_added_delay_ms < 5
        assert low <= rtt_ms(endpoint.host, endpoint.port, n=5) <= high
        if rtt == 50:
            # A new connection pays the handshake's round trip before its first request.
            start = time.perf_counter()
            with socket.create_connection((endpoint.host, endpoint.port), timeout=10) as sock:
                _ping(sock)
            first = (time.perf_counter() - start) * 1000
            assert 2 * low <= first <= 2 * high
            # The delay is not a rate limit: the relay keeps reading while chunks wait.
            assert bulk_mbit_s(endpoint.host, endpoint.port, 50_000_000) > 400


@needs_netns
@pytest.mark.parametrize(
    ("shape", "nbytes", "low", "high"),
    [
        (network_shape(0, 100), 5_000_000, 80, 101),
        (network_shape(0, 1000), 40_000_000, 500, 1010),
    ],
    ids=["100mbit", "1gbit"],
)
def test_bandwidth_is_the_shape(
    line_server: tuple[str, int], shape: NetworkShape, nbytes: int, low: float, high: float
) -> None:
    with shaped(*line_server, shape, probes=5) as endpoint:
        assert endpoint.how == "netns+tbf+relay"
        assert endpoint.host.startswith("169.254.")
        assert endpoint.measured_rtt_ms < 3
        assert low <= bulk_mbit_s(endpoint.host, endpoint.port, nbytes) <= high
        assert low <= upload_mbit_s(endpoint.host, endpoint.port, nbytes) <= high
        assert any(name.startswith("imgbench-net-") for name in shaping.leftovers())


@needs_netns
def test_latency_and_bandwidth_together(line_server: tuple[str, int]) -> None:
    with shaped(*line_server, shape_named("rtt50ms-100mbit"), probes=5) as endpoint:
        assert 45 <= endpoint.measured_rtt_ms <= 80
        assert 80 <= bulk_mbit_s(endpoint.host, endpoint.port, 5_000_000) <= 101


@needs_netns
def test_everything_is_removed_on_error(line_server: tuple[str, int]) -> None:
    with pytest.raises(RuntimeError, match="boom"), shaped(*line_server, network_shape(5, 100)):
        assert shaping.leftovers() and relay_processes()
        raise RuntimeError("boom")
    # nothing_left_behind checks the namespace, the links and the relay are gone


@needs_netns
def test_a_qdisc_this_kernel_lacks_is_unavailable_and_cleaned_up(
    line_server: tuple[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """netem is not in this kernel: a failing tc mid-set-up is a one-line reason, nothing kept."""
    monkeypatch.setattr(shaping, "_tbf", lambda rate: ["netem", "delay", "5ms"])
    with pytest.raises(ShapingUnavailable) as caught, shaped(*line_server, network_shape(0, 100)):
        pytest.fail("set-up should have failed")
    reason = str(caught.value)
    assert "\n" not in reason and reason.startswith("`tc ")


def test_without_privileges_bandwidth_is_skipped_with_the_reason(
    line_server: tuple[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(shaping.os, "geteuid", lambda: 1000)
    with (
        pytest.raises(ShapingUnavailable, match="needs root"),
        shaped(*line_server, network_shape(5, 100)),
    ):
        pass
    with (
        pytest.raises(Skip, match=r"rtt0ms-1gbit unavailable: .*needs root"),
        shaped_or_skip(*line_server, network_shape(0, 1000)),
    ):
        pass
    # Latency alone needs no privileges.
    with shaped_or_skip(*line_server, network_shape(5, None), probes=3) as endpoint:
        assert endpoint.how == "relay"


def test_a_relay_that_does_not_start_is_unavailable(
    line_server: tuple[str, int], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(shaping, "_RELAY", tmp_path / "missing_relay.py")
    with (
        pytest.raises(ShapingUnavailable, match=r"relay did not start: .*missing_relay\.py"),
        shaped(*line_server, network_shape(5, None)),
    ):
        pytest.fail("set-up should have failed")


@needs_netns
def test_a_killed_owner_leaves_no_relay_and_its_namespace_is_reclaimed(
    line_server: tuple[str, int],
) -> None:
    """SIGKILL skips every ``finally``: the relay dies with its parent, the next set-up sweeps."""
    script = (
        "import os, sys, signal\n"
        "from imgbench.objectstore.shaping import network_shape, shaped\n"
        f"with shaped('127.0.0.1', {line_server[1]}, network_shape(5, 100), probes=1) as ep:\n"
        "    print(os.getpid(), flush=True)\n"
        "    os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=60
    )
    assert proc.returncode == -9, proc.stderr
    owner = int(proc.stdout.split()[0])
    assert shaping.leftovers(owner), "the killed owner's namespace should still be there"
    target = f"127.0.0.1:{line_server[1]}"

    def relays() -> list[psutil.Process]:
        return [
            p
            for p in psutil.process_iter(["cmdline"])
            if "_relay.py" in " ".join(p.info["cmdline"] or [])
            and target in " ".join(p.info["cmdline"] or [])
        ]

    deadline = time.monotonic() + 5  # the parent-death signal is asynchronous
    while relays() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert relays() == [], "the relay outlived its killed owner"
    with shaped(*line_server, network_shape(0, 100), probes=1):
        assert shaping.leftovers(owner) == []
