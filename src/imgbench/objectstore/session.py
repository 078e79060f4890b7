"""The S3 session service: one SeaweedFS server per benchmark session, and the path to it.

:class:`S3Service` is the ``"s3"`` entry of :mod:`imgbench.harness.services`: the runner starts
it on the first S3 case and stops it when the session ends. Cases get an :class:`S3Access`:
the endpoint to use and what the network between client and server is.

:func:`network_path` is the one place where the URL S3 cases talk to is chosen. Today it is the
server's own address (``network_shaping="none"``) and the round-trip time is measured as the
median TCP connect time to it; a shaped path (a proxy in front of the server,
``imgbench.objectstore.shaping``) slots in there by returning its own address, its label and
its measured RTT, and every S3 case and row follows.
"""

from __future__ import annotations

import socket
import statistics
import time
from dataclasses import dataclass
from typing import Any

from imgbench.harness.services import ServiceUnavailableError
from imgbench.objectstore.server import S3Endpoint, ServerUnavailableError, SessionServer

RTT_PROBES = 5


@dataclass(frozen=True)
class S3Access:
    """What an S3 case uses: the endpoint, and the network path to it (for its row)."""

    endpoint: S3Endpoint
    server: str  # what serves it, e.g. "SeaweedFS (weed pid 123) at http://127.0.0.1:40101"
    network_shaping: str = "none"  # "none", or the shaping applied (its own label)
    network_rtt_ms: float | None = None  # measured on this path; None when not measured

    def columns(self) -> dict[str, Any]:
        """The row columns of every case that used this access."""
        return {
            "storage_endpoint": self.endpoint.url,
            "network_shaping": self.network_shaping,
            "network_rtt_ms": self.network_rtt_ms,
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


def network_path(endpoint: S3Endpoint, server: str) -> S3Access:
    """The address S3 cases use for ``endpoint``, and what is between them: shaping goes here."""
    return S3Access(
        endpoint=endpoint,
        server=server,
        network_shaping="none",
        network_rtt_ms=tcp_rtt_ms(endpoint.host, endpoint.port),
    )


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
            assert self.owner.server is not None
            self._access = network_path(endpoint, self.owner.server.describe())
        return self._access

    def check(self) -> None:
        self.owner.check()

    def stop(self) -> None:
        self.owner.stop()
        self._access = None
