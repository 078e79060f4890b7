"""A real local Ray cluster for tests: a head and worker nodes started with ``ray start --block``
on this machine, each with its own ``imgbench/machine`` label, stopped by process id.

``ray stop`` is never used: it ends every Ray process of the user on the machine, another
session's included. Each ``ray start --block`` leads its own session (``start_new_session``);
the raylet, the agents and the workers it starts stay in that session, so a node is ended (or
killed, to test a node that dies) by signalling the processes of its session.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

RAY = str(Path(sys.executable).with_name("ray"))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def session_processes(sid: int) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter():
        with contextlib.suppress(psutil.Error, ProcessLookupError):
            if os.getsid(proc.pid) == sid:
                found.append(proc)
    return found


@dataclass
class LocalRayCluster:
    root: Path
    labels: tuple[str, ...] = ("head", "w1", "w2")
    env: dict[str, str] = field(default_factory=dict)
    port: int = 0
    nodes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def tmp(self) -> Path:
        return self.root / "tmp"

    def node_env(self, label: str) -> dict[str, str]:
        home = self.root / "home"
        home.mkdir(parents=True, exist_ok=True)
        self.tmp.mkdir(parents=True, exist_ok=True)
        return {
            **os.environ,
            **self.env,
            "HOME": str(home),  # Ray writes ~/.ray; keep it in the test's folder
            # the shares' folders (imgbench.cluster): a killed node cannot remove its own
            "TMPDIR": str(self.tmp),
            "RAY_USAGE_STATS_ENABLED": "0",
            # a killed node is noticed in a few seconds rather than ~15 s (Ray's default period is
            # 3 s, 5 failures); shorter timeouts made nodes fail to join on this loaded 2-core VM
            "RAY_health_check_period_ms": "1000",
            "IMGBENCH_MACHINE_LABEL": f"env-{label}",
        }

    def _start(self, label: str, head: bool) -> None:
        log = (self.root / f"{label}.log").open("wb")
        common = [
            "--block",
            "--num-cpus=1",
            "--object-store-memory=100000000",
            "--node-ip-address=127.0.0.1",
            "--disable-usage-stats",
            "--include-log-monitor=false",
            f"--labels=imgbench/machine={label}",
            f"--dashboard-agent-listen-port={free_port()}",
            f"--dashboard-agent-grpc-port={free_port()}",
            f"--runtime-env-agent-port={free_port()}",
            f"--metrics-export-port={free_port()}",
        ]
        if head:
            args = [
                RAY,
                "start",
                "--head",
                f"--port={self.port}",
                "--include-dashboard=false",
                f"--temp-dir={self.root / 'ray'}",
                *common,
            ]
        else:
            args = [RAY, "start", f"--address={self.address}", *common]
        self.nodes[label] = subprocess.Popen(
            args,
            env=self.node_env(label),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def started(self, label: str) -> bool:
        """`ray start` prints this once the node has registered with the head (no `ray status`
        process per poll: each costs 2-3 s of CPU on this machine)."""
        log = self.root / f"{label}.log"
        return log.is_file() and "Ray runtime started" in log.read_text(errors="replace")

    def start(self, timeout_s: float = 120) -> LocalRayCluster:
        try:
            return self._start_all(timeout_s)
        except BaseException:
            self.stop()
            raise

    def _start_all(self, timeout_s: float) -> LocalRayCluster:
        self.port = free_port()
        self._start(self.labels[0], head=True)
        deadline = time.monotonic() + timeout_s
        while not self.started(self.labels[0]):
            self._check_running(deadline)
        # one at a time: with two `ray start` joining at once on this loaded host, one of them
        # once timed out ("Failed to get node info: Deadline Exceeded")
        for label in self.labels[1:]:
            self._start(label, head=False)
            while not self.started(label):
                self._check_running(deadline)
        return self

    def _check_running(self, deadline: float) -> None:
        for label, proc in self.nodes.items():
            if proc.poll() is not None:
                log = (self.root / f"{label}.log").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"ray node {label} exited ({proc.returncode}): {log}")
        if time.monotonic() > deadline:
            raise TimeoutError("the local Ray cluster did not start")
        time.sleep(0.5)

    def kill_node(self, label: str) -> None:
        """The node dies: every process of its session is killed at once (SIGKILL)."""
        proc = self.nodes[label]
        for child in session_processes(proc.pid):
            with contextlib.suppress(psutil.Error):
                child.kill()
        proc.wait(timeout=30)

    def processes(self) -> list[psutil.Process]:
        return [p for proc in self.nodes.values() for p in session_processes(proc.pid)]

    def stop(self) -> None:
        """Workers first, then the head: SIGTERM to each `ray start --block`, then SIGKILL to
        anything left in its session."""
        for label in reversed(list(self.nodes)):
            proc = self.nodes[label]
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=10)
        deadline = time.monotonic() + 10
        while (left := self.processes()) and time.monotonic() < deadline:
            time.sleep(0.2)
        for child in left:
            with contextlib.suppress(psutil.Error):
                child.kill()
