"""A delaying TCP relay, run as its own process by ``imgbench.objectstore.shaping``.

Standard library only, run by path (``python -I _relay.py ...``), so it needs no install and takes
no import time of imgbench. Each chunk read from one side is written to the other ``--one-way-ms``
after it was read, in order; reading goes on while earlier chunks wait, so the delay does not
serialise the bandwidth (a sleep before each read would cap a stream at chunk / delay). A new
connection's first client bytes leave no earlier than one round trip after the accept, as they
would after a real handshake over the delayed path (``--handshake-ms``).

Beside the relay it serves a local echo socket and a second "probe" listener that relays to it
with the same delays, so the parent can measure the round trip of the shaped path without the
target server's own work in the figure.

It prints ``READY <relay port> <probe port> <echo port>`` once listening and exits when its
standard input closes (the parent ended, or asked it to) or on SIGTERM.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import ctypes
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable

CHUNK = 256 * 1024
CLONE_NEWNET = 0x40000000
PR_SET_PDEATHSIG = 1
PR_SET_TIMERSLACK = 29


def _nodelay(sock: socket.socket) -> None:
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def listener_in_netns(netns: str | None, host: str) -> socket.socket:
    """A listening socket bound in network namespace ``netns`` (None: this process's own).

    ``setns`` moves only the calling thread, so a short-lived thread enters the namespace, makes
    the socket and ends; the socket stays in the namespace it was made in.
    """
    made: dict[str, object] = {}

    def make() -> None:
        try:
            if netns is not None:
                libc = ctypes.CDLL(None, use_errno=True)
                fd = os.open(f"/run/netns/{netns}", os.O_RDONLY)
                try:
                    if libc.setns(fd, CLONE_NEWNET) != 0:
                        err = ctypes.get_errno()
                        raise OSError(err, f"setns into {netns}: {os.strerror(err)}")
                finally:
                    os.close(fd)
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((host, 0))
            sock.listen(128)
            made["sock"] = sock
        except BaseException as exc:
            made["error"] = exc

    thread = threading.Thread(target=make, name="netns-listener")
    thread.start()
    thread.join()
    if "error" in made:
        raise made["error"]  # type: ignore[misc]
    return made["sock"]  # type: ignore[return-value]


class Direction:
    """One direction of one connection: chunks from ``src`` reach ``dst`` ``delay_s`` later."""

    def __init__(
        self,
        src: socket.socket,
        dst: socket.socket,
        delay_s: float,
        not_before: float,
        queue_bytes: int,
        on_error: Callable[[], None],
    ) -> None:
        self.src, self.dst = src, dst
        self.delay_s, self.not_before = delay_s, not_before
        self.queue_bytes = queue_bytes
        self.on_error = on_error
        self.queue: collections.deque[tuple[float, bytes]] = collections.deque()
        self.queued = 0
        self.closed = False
        self.cond = threading.Condition()
        if delay_s <= 0 and not_before <= 0:
            self.threads = [threading.Thread(target=self._pass_through, daemon=True)]
        else:
            self.threads = [
                threading.Thread(target=self._read, daemon=True),
                threading.Thread(target=self._write, daemon=True),
            ]
        for thread in self.threads:
            thread.start()

    def _pass_through(self) -> None:
        try:
            while data := self.src.recv(CHUNK):
                self.dst.sendall(data)
            self.dst.shutdown(socket.SHUT_WR)
        except OSError:
            self.on_error()

    def _read(self) -> None:
        while True:
            try:
                data = self.src.recv(CHUNK)
            except OSError:
                data = b""
            release = max(time.monotonic(), self.not_before) + self.delay_s
            with self.cond:
                while self.queued > self.queue_bytes and not self.closed:
                    self.cond.wait()
                if self.closed:
                    return
                self.queue.append((release, data))
                self.queued += len(data)
                self.cond.notify_all()
            if not data:
                return

    def _write(self) -> None:
        while True:
            with self.cond:
                while not self.queue and not self.closed:
                    self.cond.wait()
                if self.closed:
                    return
                release, data = self.queue[0]
            wait = release - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            with self.cond:
                self.queue.popleft()
                self.queued -= len(data)
                self.cond.notify_all()
            try:
                if not data:
                    self.dst.shutdown(socket.SHUT_WR)
                    return
                self.dst.sendall(data)
            except OSError:
                self.close()
                self.on_error()
                return

    def close(self) -> None:
        with self.cond:
            self.closed = True
            self.cond.notify_all()


def relay_connection(
    client: socket.socket, target: tuple[str, int], one_way_s: float, handshake_s: float
) -> None:
    accepted = time.monotonic()
    try:
        upstream = socket.create_connection(target, timeout=10)
    except OSError:
        client.close()
        return
    upstream.settimeout(None)
    for sock in (client, upstream):
        _nodelay(sock)
    directions: list[Direction] = []

    def fail() -> None:
        for direction in directions:
            direction.close()
        for sock in (client, upstream):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    queue_bytes = 32 * 1024 * 1024
    not_before = accepted + handshake_s if handshake_s > 0 else 0.0
    up = Direction(client, upstream, one_way_s, not_before, queue_bytes, fail)
    down = Direction(upstream, client, one_way_s, 0.0, queue_bytes, fail)
    directions += [up, down]
    for thread in up.threads + down.threads:
        thread.join()
    for sock in (client, upstream):
        sock.close()


def serve(
    listener: socket.socket, target: tuple[str, int], one_way_s: float, handshake_s: float
) -> None:
    while True:
        try:
            client, _ = listener.accept()
        except OSError:
            return
        threading.Thread(
            target=relay_connection, args=(client, target, one_way_s, handshake_s), daemon=True
        ).start()


def echo(listener: socket.socket) -> None:
    def one(conn: socket.socket) -> None:
        _nodelay(conn)
        with conn:
            try:
                while data := conn.recv(CHUNK):
                    conn.sendall(data)
            except OSError:
                pass

    while True:
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        threading.Thread(target=one, args=(conn,), daemon=True).start()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", required=True, help="HOST:PORT of the server relayed to")
    parser.add_argument("--listen-host", default="127.0.0.1")
    parser.add_argument("--netns", default=None, help="make the listeners in this namespace")
    parser.add_argument("--one-way-ms", type=float, default=0.0)
    parser.add_argument("--handshake-ms", type=float, default=0.0)
    args = parser.parse_args(argv)
    # Die with the parent even if it is killed without closing our standard input.
    # Sleeps wake up to 50 us late by default (timer slack); 1 ns makes them as exact as the
    # scheduler allows. Threads inherit it from this one.
    try:
        libc = ctypes.CDLL(None)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        libc.prctl(PR_SET_TIMERSLACK, 1)
    except (OSError, AttributeError):
        pass
    host, _, port = args.target.rpartition(":")
    target = (host, int(port))
    one_way_s, handshake_s = args.one_way_ms / 1000.0, args.handshake_ms / 1000.0
    relay = listener_in_netns(args.netns, args.listen_host)
    probe = listener_in_netns(args.netns, args.listen_host)
    echo_listener = listener_in_netns(None, "127.0.0.1")
    echo_target = echo_listener.getsockname()[:2]
    for name, fn, fn_args in (
        ("relay", serve, (relay, target, one_way_s, handshake_s)),
        ("probe", serve, (probe, echo_target, one_way_s, handshake_s)),
        ("echo", echo, (echo_listener,)),
    ):
        threading.Thread(target=fn, args=fn_args, name=name, daemon=True).start()
    ports = (relay.getsockname()[1], probe.getsockname()[1], echo_target[1])
    sys.stdout.write("READY {} {} {}\n".format(*ports))
    sys.stdout.flush()
    sys.stdin.buffer.read()  # returns when the parent closes the pipe or dies
    return 0


if __name__ == "__main__":
    sys.exit(main())
