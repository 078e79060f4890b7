"""The S3 session service: one SeaweedFS server per benchmark session, and the path to it.

:class:`S3Service` is the ``"s3"`` entry of :mod:`imgbench.measure.services`: the runner starts
it on the first S3 case and stops it when the session ends. Cases get an :class:`S3Access`:
the endpoint to use and what the network between client and server is.

:func:`network_path` is the one place where the URL S3 cases talk to is chosen. Unshaped, it is
the server's own address (``network_shaping="none"``) and the round-trip time is the median TCP
connect time to it. Shaped (``imgbench.objectstore.shaping``), it is the shaped path's address
(a relay, in a network namespace for a bandwidth cap), the shape's name, and the round trip
measured through that path at set-up.

Shapes are service variants: ``"s3@rtt50ms-unlimited"`` is :class:`ShapedS3Service`, made by
``S3Service.variant``; it shares the session's server and keeps one shaped path for the session
(set up on first use, removed with the session, before the server). The runner owns both, so a
case (in a worker fork too) only gets host:port. A shape that cannot be set up here
(``ShapingUnavailable``) is ``ServiceUnavailableError``: a skipped row with the one-line reason.
"""

from __future__ import annotations

import contextlib
import socket
import statistics
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from imgbench.measure.services import ServiceUnavailableError
from imgbench.objectstore.server import S3Endpoint, ServerUnavailableError, SessionServer

if TYPE_CHECKING:
    from imgbench.objectstore.shaping import NetworkShape, ShapedEndpoint

RTT_PROBES = 5


@dataclass(frozen=True)
class S3Access:
    """What an S3 case uses: the endpoint, and the network path to it (for its row)."""

    endpoint: S3Endpoint
    server: str  # what serves it, e.g. "SeaweedFS (weed pid 123) at http://127.0.0.1:40101"
    network_shaping: str = "none"  # "none", or the shape applied (its name, rtt50ms-100mbit)
    network_rtt_ms: float | None = None  # measured on this path; None when not measured
    # the server's own address, for set-up work that is not timed (the session's uploads of the
    # stores the read cases read): the same for every shape; None: ``endpoint`` is it
    origin: S3Endpoint | None = None
    network_how: str = "direct"  # "direct" | "relay" | "netns+tbf+relay"
    network_rtt_direct_ms: float | None = None  # shaped: the same exchanges on the loopback
    network_relay_added_ms: float | None = None  # shaped: measured - shape's RTT - direct

    @property
    def server_endpoint(self) -> S3Endpoint:
        """The server itself, not through the shaped path."""
        return self.origin or self.endpoint

    def columns(self) -> dict[str, Any]:
        """The row columns of every case that used this access."""
        return {
            "storage_endpoint": self.endpoint.url,
            "network_shaping": self.network_shaping,
            "network_rtt_ms": self.network_rtt_ms,
        }

    def extra(self) -> dict[str, Any]:
        """What a row's ``extra_json`` records about the path (beside its columns)."""
        return {
            "network_how": self.network_how,
            "network_rtt_direct_ms": self.network_rtt_direct_ms,
            "network_relay_added_ms": self.network_relay_added_ms,
        }


def tcp_rtt_ms(host: str, port: int, probes: int = RTT_PROBES) -> float | None:
    """Median TCP connect time to ``host:port`` in ms (one round trip each); None if refused."""
    times = []
    for _ in range(probes):
        start = time.perf_counter()
        try:
            with socket.create_connection((host, port), timeout=5):
                times.append(time.perf_counter() - start)
        except OSError:
            return None
    return round(statistics.median(times) * 1e3, 4)


def network_path(
    endpoint: S3Endpoint, server: str, shaped: ShapedEndpoint | None = None
) -> S3Access:
    """The address S3 cases use for ``endpoint``, and what is between them.

    ``shaped``: the shaped path in front of the server (``shaping.shaped``); None, or an
    unshaped one (``how == "direct"``), is the server's own address, ``network_shaping="none"``.
    """
    if shaped is None or shaped.how == "direct":
        return S3Access(
            endpoint=endpoint,
            server=server,
            network_shaping="none",
            network_rtt_ms=tcp_rtt_ms(endpoint.host, endpoint.port),
        )
    return S3Access(
        endpoint=endpoint.with_url(f"http://{shaped.host}:{shaped.port}"),
        server=server,
        network_shaping=shaped.shape.name,
        network_rtt_ms=round(shaped.measured_rtt_ms, 3),
        origin=endpoint,
        network_how=shaped.how,
        network_rtt_direct_ms=round(shaped.direct_rtt_ms, 3),
        network_relay_added_ms=round(shaped.relay_added_delay_ms, 3),
    )


def service_name(shape: NetworkShape) -> str:
    """The session service a case with this network shape needs: ``s3`` when unshaped."""
    return "s3" if shape.unshaped else f"s3@{shape.name}"


class S3Service:
    """The session's S3 server (``SessionServer``) as a harness service."""

    def __init__(self) -> None:
        self.owner = SessionServer()
        self._access: S3Access | None = None

    def acquire(self) -> S3Access:
        try:
            endpoint = self.owner.endpoint()
        except ServerUnavailableError as exc:
            raise ServiceUnavailableError(str(exc)) from None
        if self._access is None:
            self._access = network_path(endpoint, self.owner.describe())
        return self._access

    def check(self) -> None:
        self.owner.check()

    def stop(self) -> None:
        self.owner.stop()
        self._access = None

    def variant(self, shape_name: str) -> ShapedS3Service:
        """The ``s3@<shape>`` service: this server behind a shaped network path."""
        from imgbench.objectstore.shaping import shape_named

        return ShapedS3Service(self, shape_named(shape_name))


class ShapedS3Service:
    """The session's S3 server behind one network shape: one shaped path for the session."""

    def __init__(self, base: S3Service, shape: NetworkShape) -> None:
        self.base = base
        self.shape = shape
        self._stack = contextlib.ExitStack()
        self._access: S3Access | None = None
        self._unavailable: str | None = None

    def acquire(self) -> S3Access:
        from imgbench.objectstore.shaping import ShapingUnavailable, shaped

        direct = self.base.acquire()  # the server first: its faults are the server's
        if self._unavailable is not None:
            raise ServiceUnavailableError(self._unavailable)
        if self._access is None:
            endpoint = direct.endpoint
            try:
                path = self._stack.enter_context(shaped(endpoint.host, endpoint.port, self.shape))
            except ShapingUnavailable as exc:  # set up once: every case of it skips, same reason
                self._unavailable = f"network shaping {self.shape.name} unavailable: {exc}"
                raise ServiceUnavailableError(self._unavailable) from None
            self._access = network_path(endpoint, direct.server, path)
        return self._access

    def check(self) -> None:
        self.base.check()

    def stop(self) -> None:
        self._access = None
        self._stack.close()
