"""Network conditions as a benchmark dimension: a shaped TCP path in front of any server.

``shaped(host, port, shape)`` gives an endpoint whose traffic to ``host:port`` sees the shape's
round-trip time and bandwidth, and the round trip measured on that path:

- **Bandwidth**: the run creates a network namespace and a veth pair into it, with a ``tbf``
  qdisc on both ends (client to server on the host side, server to client on the namespace side).
  The relay's listener lives in the namespace, so every byte crosses the shaped veth.
- **Latency**: this kernel has no ``netem`` (nor ``fq``, which could hold packets to a
  timestamp), and nothing installable here delays TCP without serialising it (docs/decisions.md),
  so a small relay process (``_relay.py``) writes each chunk one half round trip after it read it,
  in each direction, and holds a new connection's first bytes one round trip (the handshake).
- **No shaping** (0 ms, unlimited) is the server itself, untouched (``how == "direct"``).

Latency alone needs no privileges (the relay listens on the loopback); bandwidth needs root,
``ip`` and ``tc``. Where a shape cannot be set up, ``shaped`` raises ``ShapingUnavailable`` with a
one-line reason, which a case turns into a skipped row. Everything it creates (namespace, veth
pair, qdiscs, relay process) is removed when the context exits, on error too.

What the relay does not model: the client's TCP sees the short veth leg, not the delay, so slow
start and window limits of a long path are not reproduced; request/response round trips and
connection set-up are.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import select
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from imgbench.measure.errors import Skip
from imgbench.pids import pid_alive

_RELAY = Path(__file__).with_name("_relay.py")
_NETNS_PREFIX = "imgbench-net-"
_LINK_PREFIX = "ibn"
_counter = itertools.count()


class ShapingUnavailable(RuntimeError):  # noqa: N818 (the name the S3 cases catch)
    """This shape cannot be set up here; ``str(exc)`` is a one-line reason for a skipped row."""


@dataclass(frozen=True)
class NetworkShape:
    """A network condition: a round-trip time added to the path and a bandwidth cap."""

    name: str
    rtt_ms: float
    rate_mbit: float | None  # None: unlimited

    @property
    def unshaped(self) -> bool:
        return self.rtt_ms <= 0 and self.rate_mbit is None

    def params(self) -> dict[str, object]:
        """The shape as case parameters: a dimension, the same in every run."""
        return {
            "network_shaping": self.name,
            "network_rtt_target_ms": self.rtt_ms,
            "network_rate_mbit": self.rate_mbit,
        }


def _rate_label(rate_mbit: float | None) -> str:
    if rate_mbit is None:
        return "unlimited"
    if rate_mbit >= 1000 and rate_mbit % 1000 == 0:
        return f"{int(rate_mbit // 1000)}gbit"
    return f"{rate_mbit:g}mbit"


def network_shape(rtt_ms: float, rate_mbit: float | None) -> NetworkShape:
    """A shape named like ``rtt50ms-100mbit`` or ``rtt0ms-unlimited``."""
    if rtt_ms < 0 or (rate_mbit is not None and rate_mbit <= 0):
        raise ValueError(f"no such network shape: rtt {rtt_ms} ms, rate {rate_mbit} Mbit/s")
    return NetworkShape(f"rtt{rtt_ms:g}ms-{_rate_label(rate_mbit)}", float(rtt_ms), rate_mbit)


RTTS_MS: tuple[float, ...] = (0, 5, 50)
RATES_MBIT: tuple[float | None, ...] = (None, 1000, 100)
# The parameter table: every round trip with every bandwidth, unshaped first.
SHAPES: tuple[NetworkShape, ...] = tuple(
    network_shape(rtt, rate) for rtt in RTTS_MS for rate in RATES_MBIT
)
UNSHAPED = SHAPES[0]


def shape_named(name: str) -> NetworkShape:
    for shape in SHAPES:
        if shape.name == name:
            return shape
    match = re.fullmatch(r"rtt([0-9.]+)ms-(unlimited|([0-9.]+)(gbit|mbit))", name)
    if match is None:
        raise ValueError(f"not a network shape name: {name!r} (like 'rtt50ms-100mbit')")
    rate = None
    if match.group(3) is not None:
        rate = float(match.group(3)) * (1000 if match.group(4) == "gbit" else 1)
    return network_shape(float(match.group(1)), rate)


@dataclass(frozen=True)
class ShapedEndpoint:
    """Where to connect for the shaped path, and what was measured on it at set-up."""

    host: str
    port: int
    shape: NetworkShape
    measured_rtt_ms: float  # median round trip of small exchanges through the shaped path
    relay_added_delay_ms: float  # measured - shape.rtt_ms - direct_rtt_ms: the path's own cost
    how: str  # "direct" | "relay" | "netns+tbf+relay"
    direct_rtt_ms: float = 0.0  # the same exchanges on the loopback, no relay


def measured_fields(endpoint: ShapedEndpoint) -> dict[str, object]:
    """What a row records about its network path (``network_shaping``, ``network_rtt_ms``, ...)."""
    return {
        "network_shaping": endpoint.shape.name,
        "network_rtt_ms": round(endpoint.measured_rtt_ms, 3),
        "network_rtt_direct_ms": round(endpoint.direct_rtt_ms, 3),
        "network_relay_added_ms": round(endpoint.relay_added_delay_ms, 3),
        "network_how": endpoint.how,
    }


def unavailable_fields(shape: NetworkShape) -> dict[str, object]:
    """The same fields for a case skipped because its shape could not be set up."""
    return {
        "network_shaping": shape.name,
        "network_rtt_ms": None,
        "network_rtt_direct_ms": None,
        "network_relay_added_ms": None,
        "network_how": None,
    }


# -- measuring ---------------------------------------------------------------------------------


def round_trips_ms(host: str, port: int, probes: int = 10, size: int = 64) -> list[float]:
    """Round trips (ms) of ``probes`` small exchanges with an echo server at ``host:port``.

    One exchange on the fresh connection goes first, untimed, so connection set-up is not in
    the figures.
    """
    payload = b"x" * size
    times: list[float] = []
    with socket.create_connection((host, port), timeout=30) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for i in range(probes + 1):
            start = time.perf_counter()
            sock.sendall(payload)
            got = 0
            while got < size:
                data = sock.recv(size - got)
                if not data:
                    raise ConnectionError("the echo server closed the connection")
                got += len(data)
            if i:
                times.append((time.perf_counter() - start) * 1000.0)
    return times


@contextlib.contextmanager
def _local_echo() -> Iterator[tuple[str, int]]:
    """An echo server on the loopback, in a thread, for the unshaped path's round trip."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                with contextlib.suppress(OSError):
                    while data := conn.recv(65536):
                        conn.sendall(data)

    thread = threading.Thread(target=serve, name="imgbench-echo", daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[:2]
    finally:
        with contextlib.suppress(OSError):
            listener.shutdown(socket.SHUT_RDWR)
        listener.close()
        thread.join(timeout=5)


# -- set-up and tear-down ----------------------------------------------------------------------


def _run(*cmd: str) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=False)
    if proc.returncode != 0:
        detail = (proc.stderr or proc.stdout).strip().splitlines()
        reason = detail[0] if detail else f"exit {proc.returncode}"
        raise ShapingUnavailable(f"`{' '.join(cmd)}` failed: {reason}")


def _netns_names() -> list[str]:
    if shutil.which("ip") is None:
        return []
    proc = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=False)
    return [line.split()[0] for line in proc.stdout.splitlines() if line.strip()]


def _link_names() -> list[str]:
    if shutil.which("ip") is None:
        return []
    proc = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True, check=False)
    names = []
    for line in proc.stdout.splitlines():
        parts = line.split(":", 2)
        if len(parts) > 1:
            names.append(parts[1].strip().split("@")[0])
    return names


def leftovers(pid: int | None = None) -> list[str]:
    """Namespaces and links that this module made and that still exist.

    Those of process ``pid`` (default: this one); ``pid=0``: of any process.
    """
    pid = os.getpid() if pid is None else pid
    netns, link = (
        (_NETNS_PREFIX, _LINK_PREFIX)
        if pid == 0
        else (
            f"{_NETNS_PREFIX}{pid}-",
            f"{_LINK_PREFIX}{pid}x",
        )
    )
    return [n for n in _netns_names() if n.startswith(netns)] + [
        n for n in _link_names() if n.startswith(link)
    ]


def _remove_stale() -> None:
    """Namespaces left by a process that was killed before its context exited."""
    for name in _netns_names():
        match = re.fullmatch(re.escape(_NETNS_PREFIX) + r"(\d+)-\d+", name)
        if match and not pid_alive(int(match.group(1))):
            subprocess.run(["ip", "netns", "del", name], capture_output=True, check=False)


def shaping_unavailable_reason(shape: NetworkShape) -> str | None:
    """Why ``shape`` cannot be set up here (cheap checks only), or None."""
    if shape.rate_mbit is None:
        return None  # the relay alone needs no privileges
    if sys.platform != "linux":
        return f"bandwidth shaping needs Linux network namespaces (this is {sys.platform})"
    if os.geteuid() != 0:
        return "bandwidth shaping needs root (ip netns, tc)"
    for tool in ("ip", "tc"):
        if shutil.which(tool) is None:
            return f"bandwidth shaping needs `{tool}` (Debian: iproute2)"
    return None


def _free_subnet() -> tuple[str, str]:
    """Two addresses of a link-local /30 that no interface here uses."""
    proc = subprocess.run(["ip", "-4", "-o", "addr"], capture_output=True, text=True, check=False)
    used = set(re.findall(r"inet (169\.254\.\d+\.\d+)", proc.stdout))
    start = (os.getpid() * 7 + next(_counter)) % 4096
    for k in range(4096):
        block = (start + k) % 4096
        third, fourth = 192 + block // 64, (block % 64) * 4
        host, peer = f"169.254.{third}.{fourth + 1}", f"169.254.{third}.{fourth + 2}"
        if host not in used and peer not in used:
            return host, peer
    raise ShapingUnavailable("no free link-local /30 for the shaping veth pair")


def _tbf(rate_mbit: float) -> list[str]:
    rate_bytes = rate_mbit * 1e6 / 8
    burst = max(int(rate_bytes * 0.001), 32 * 1024)  # 1 ms at the rate, at least 32 KiB
    limit = max(int(rate_bytes * 0.01), 4 * burst, 256 * 1024)  # ~10 ms of queue
    return ["tbf", "rate", f"{rate_mbit:g}mbit", "burst", str(burst), "limit", str(limit)]


@contextlib.contextmanager
def _shaped_link(rate_mbit: float) -> Iterator[tuple[str, str]]:
    """A namespace and a veth pair into it, ``tbf`` at ``rate_mbit`` on both ends.

    Yields (namespace name, the namespace side's address); removes both on exit.
    """
    _remove_stale()
    k = next(_counter)
    netns = f"{_NETNS_PREFIX}{os.getpid()}-{k}"
    # interface names have at most 15 characters: "ibn" + pid (<= 7 digits) + "x" + k + side
    stem = f"{_LINK_PREFIX}{os.getpid()}x{k % 1000}"
    host_dev, ns_dev = stem + "h", stem + "n"
    created_ns = False
    try:
        _run("ip", "netns", "add", netns)
        created_ns = True
        host_ip, ns_ip = _free_subnet()
        _run("ip", "link", "add", host_dev, "type", "veth", "peer", "name", ns_dev)
        _run("ip", "link", "set", ns_dev, "netns", netns)
        _run("ip", "addr", "add", f"{host_ip}/30", "dev", host_dev)
        _run("ip", "link", "set", host_dev, "up")
        _run("ip", "-n", netns, "addr", "add", f"{ns_ip}/30", "dev", ns_dev)
        _run("ip", "-n", netns, "link", "set", ns_dev, "up")
        _run("ip", "-n", netns, "link", "set", "lo", "up")
        _run("tc", "qdisc", "replace", "dev", host_dev, "root", *_tbf(rate_mbit))
        _run("tc", "-n", netns, "qdisc", "replace", "dev", ns_dev, "root", *_tbf(rate_mbit))
        yield netns, ns_ip
    finally:
        if created_ns:
            # Deleting the namespace destroys its end of the veth pair, and with it the peer.
            subprocess.run(["ip", "netns", "del", netns], capture_output=True, check=False)
        if host_dev in _link_names():
            subprocess.run(["ip", "link", "del", host_dev], capture_output=True, check=False)


@contextlib.contextmanager
def _relay(
    target: tuple[str, int], one_way_ms: float, handshake_ms: float, listen: str, netns: str | None
) -> Iterator[tuple[int, int, int]]:
    """The relay process; yields its (relay, probe, echo) ports and stops it on exit."""
    cmd = [sys.executable, "-I", str(_RELAY), "--target", f"{target[0]}:{target[1]}"]
    cmd += ["--listen-host", listen, "--one-way-ms", str(one_way_ms)]
    cmd += ["--handshake-ms", str(handshake_ms)]
    if netns is not None:
        cmd += ["--netns", netns]
    # stderr to a file, not a pipe: a pipe nobody reads would block the relay once full
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err)
        try:
            assert proc.stdout is not None
            ready, _, _ = select.select([proc.stdout], [], [], 15)
            line = proc.stdout.readline().decode() if ready else ""
            if not line.startswith("READY "):
                proc.kill()
                proc.wait(timeout=5)
                err.seek(0)
                text = err.read().decode(errors="replace").strip().splitlines()
                raise ShapingUnavailable(
                    f"the delaying relay did not start: {(text or ['no output'])[-1]}"
                )
            relay_port, probe_port, echo_port = (int(p) for p in line.split()[1:4])
            yield relay_port, probe_port, echo_port
        finally:
            if proc.stdin is not None:
                with contextlib.suppress(OSError):
                    proc.stdin.close()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)
            if proc.stdout is not None:
                proc.stdout.close()


@contextlib.contextmanager
def shaped(
    target_host: str,
    target_port: int,
    shape: NetworkShape,
    *,
    probes: int = 10,
    force_relay: bool = False,
) -> Iterator[ShapedEndpoint]:
    """A path to ``target_host:target_port`` with ``shape``'s round trip and bandwidth.

    Connect to the endpoint's ``host:port`` instead of the target's. ``probes`` small exchanges
    measure the path's round trip at set-up (median). ``force_relay`` puts the relay (with no
    delay) in front of an unshaped target too, to measure the relay's own cost.
    Raises ``ShapingUnavailable`` (a one-line reason) where the shape cannot be set up here.
    """
    reason = shaping_unavailable_reason(shape)
    if reason is not None:
        raise ShapingUnavailable(reason)
    with _local_echo() as echo:
        direct = statistics.median(round_trips_ms(*echo, probes=probes))
    if shape.unshaped and not force_relay:
        yield ShapedEndpoint(target_host, target_port, shape, direct, 0.0, "direct", direct)
        return
    with contextlib.ExitStack() as stack:
        netns, listen, how = None, "127.0.0.1", "relay"
        if shape.rate_mbit is not None:
            netns, listen = stack.enter_context(_shaped_link(shape.rate_mbit))
            how = "netns+tbf+relay"
        relay_port, probe_port, _ = stack.enter_context(
            _relay((target_host, target_port), shape.rtt_ms / 2, shape.rtt_ms, listen, netns)
        )
        measured = statistics.median(round_trips_ms(listen, probe_port, probes=probes))
        added = measured - shape.rtt_ms - direct
        yield ShapedEndpoint(listen, relay_port, shape, measured, added, how, direct)


@contextlib.contextmanager
def shaped_or_skip(
    target_host: str, target_port: int, shape: NetworkShape, **kwargs: object
) -> Iterator[ShapedEndpoint]:
    """``shaped`` for a benchmark case: a shape that cannot be set up skips the case, with why.

    Only set-up is turned into a skip; an error in the body propagates as a failure.
    """

    with contextlib.ExitStack() as stack:
        try:
            endpoint = stack.enter_context(
                shaped(target_host, target_port, shape, **kwargs)  # type: ignore[arg-type]
            )
        except ShapingUnavailable as exc:
            raise Skip(f"network shaping {shape.name} unavailable: {exc}") from exc
        yield endpoint
