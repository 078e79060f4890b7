"""Ending a dashboard server as a script or a service manager ends it, and checking that nothing
is left: the port free and no Streamlit process (test_browser.py's servers, test_dashboard_command.py)."""

from __future__ import annotations

import signal
import socket
import subprocess
import time

import psutil


def listening(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def stop_and_check_gone(proc: subprocess.Popen[bytes] | subprocess.Popen[str], port: int) -> None:
    """SIGTERM the server, then assert the port stops answering and no process serves it."""
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=30)
    deadline = time.monotonic() + 10
    while listening(port) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not listening(port), f"port {port} still answers after SIGTERM"
    left = [
        p.pid
        for p in psutil.process_iter(["cmdline"])
        if f"--server.port={port}" in " ".join(p.info["cmdline"] or [])
    ]
    assert left == [], f"Streamlit processes left on port {port}: {left}"
