"""How close the network shapes come to what they claim, on this machine: a Markdown table.

    sudo .venv/bin/python lab/shaping_check.py            # all nine shapes, 3 repeats
    .venv/bin/python lab/shaping_check.py --shape rtt50ms-unlimited --repeats 5

For each shape (and the relay alone, with no delay, in front of the unshaped server) it starts a
small line server of its own on the loopback, opens ``imgbench.objectstore.shaping.shaped`` in
front of it and measures, per repeat:

- ``probe RTT``: what the endpoint itself measured at set-up (median of ``--probes`` exchanges);
- ``RTT``: the median of ``--probes`` request/response exchanges with the server, this script's
  own figure, through the relayed port;
- ``first``: connect + the first exchange on a new connection (a real path pays 2 round trips);
- ``relay added``: the endpoint's ``relay_added_delay_ms`` (probe RTT - shape RTT - loopback RTT);
- ``down Mbit/s``: goodput of one download (``BULK n``), timed from its first to its last byte;
- ``up Mbit/s``: goodput of one upload (``SINK n``), until the server's ``OK`` less one RTT.

Columns give the median over repeats and [min-max]. Shapes with a bandwidth need root.
"""

from __future__ import annotations

import argparse
import socket
import statistics
import threading
import time

from imgbench.objectstore.shaping import SHAPES, UNSHAPED, ShapingUnavailable, shape_named, shaped


def line_server() -> tuple[str, int]:
    """``PING`` lines come back; ``BULK n`` sends n bytes; ``SINK n`` reads n bytes, says ``OK``."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    block = b"\0" * (1 << 20)

    def one(conn: socket.socket) -> None:
        with conn, conn.makefile("rb") as lines:
            for line in lines:
                if line.startswith(b"BULK "):
                    left = int(line.split()[1])
                    while left > 0:
                        conn.sendall(block[: min(left, len(block))])
                        left -= len(block)
                elif line.startswith(b"SINK "):
                    left = int(line.split()[1])
                    while left > 0:
                        left -= len(lines.read1(min(left, 1 << 20)))
                    conn.sendall(b"OK\n")
                else:
                    conn.sendall(line)

    def serve() -> None:
        while True:
            conn, _ = listener.accept()
            threading.Thread(target=one, args=(conn,), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    return listener.getsockname()[:2]


def ping(sock: socket.socket) -> float:
    start = time.perf_counter()
    sock.sendall(b"PING\n")
    got = b""
    while not got.endswith(b"\n"):
        got += sock.recv(64)
    return (time.perf_counter() - start) * 1000.0


def measure(host: str, port: int, probes: int, nbytes: int) -> tuple[float, float, float, float]:
    """(median RTT ms, first exchange on a new connection ms, download and upload Mbit/s)."""
    start = time.perf_counter()
    with socket.create_connection((host, port)) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        ping(sock)
        first = (time.perf_counter() - start) * 1000.0
        rtt = statistics.median(ping(sock) for _ in range(probes))
        sock.sendall(f"BULK {nbytes}\n".encode())
        got = len(sock.recv(1 << 20))
        begin, skipped = time.perf_counter(), got
        while got < nbytes:
            got += len(sock.recv(1 << 20))
        mbit = (got - skipped) * 8 / 1e6 / (time.perf_counter() - begin)
        begin = time.perf_counter()
        sock.sendall(f"SINK {nbytes}\n".encode())
        sock.sendall(bytes(nbytes))
        assert sock.recv(16) == b"OK\n"
        up = nbytes * 8 / 1e6 / (time.perf_counter() - begin - rtt / 1000)
    return rtt, first, mbit, up


def spread(values: list[float], fmt: str) -> str:
    mid = statistics.median(values)
    return f"{mid:{fmt}} [{min(values):{fmt}}-{max(values):{fmt}}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", action="append", help="a shape name; default: the table")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--probes", type=int, default=20)
    args = parser.parse_args()
    shapes = [shape_named(name) for name in args.shape] if args.shape else list(SHAPES)
    runs = [(UNSHAPED, True)] if not args.shape else []
    runs += [(shape, False) for shape in shapes]
    host, port = line_server()
    print(
        "| shape | how | probe RTT ms | RTT ms | first ms | relay added ms | down Mbit/s | up Mbit/s |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for shape, force_relay in runs:
        rate = shape.rate_mbit or 4000
        nbytes = int(min(max(rate * 1e6 / 8 * 0.5, 5e6), 100e6))  # ~0.5 s of transfer
        rows: dict[str, list[float]] = {
            "probe": [],
            "rtt": [],
            "first": [],
            "added": [],
            "mb": [],
            "up": [],
        }
        how = ""
        try:
            for _ in range(args.repeats):
                with shaped(host, port, shape, probes=args.probes, force_relay=force_relay) as ep:
                    rtt, first, mbit, up = measure(ep.host, ep.port, args.probes, nbytes)
                    how = ep.how
                    rows["probe"].append(ep.measured_rtt_ms)
                    rows["added"].append(ep.relay_added_delay_ms)
                rows["rtt"].append(rtt)
                rows["first"].append(first)
                rows["mb"].append(mbit)
                rows["up"].append(up)
        except ShapingUnavailable as exc:
            print(f"| {shape.name} | skipped: {exc} | | | | | | |")
            continue
        name = shape.name + (" (relay forced)" if force_relay else "")
        cells = [spread(rows[k], ".2f") for k in ("probe", "rtt", "first", "added")]
        rates = [spread(rows[k], ".0f") for k in ("mb", "up")]
        print(f"| {name} | {how} | " + " | ".join(cells + rates) + " |")


if __name__ == "__main__":
    main()
