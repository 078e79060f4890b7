"""`imgbench dashboard` ended with SIGTERM (as a script or a service manager ends it) leaves no
server behind: the port is free and no Streamlit process survives.

Where Chromium is installed, tests/dashboard/test_browser.py starts every server it drives this
way and checks the same after its SIGTERM: this test is for machines without it."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.dashboard.servers import stop_and_check_gone

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")  # tests/dashboard/test_browser.py's


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _answers(port: int) -> bool:
    url = f"http://127.0.0.1:{port}/_stcore/health"
    with contextlib.suppress(OSError), urllib.request.urlopen(url, timeout=2) as response:
        return response.status == 200
    return False


@pytest.mark.skipif(
    CHROMIUM.exists(),
    reason="checked on each of tests/dashboard/test_browser.py's servers (same start, same SIGTERM)",
)
def test_sigterm_stops_the_server_and_frees_the_port(tmp_path: Path) -> None:
    port = _free_port()
    cli = (
        "import sys; from imgbench.cli import app; "
        "sys.argv = ['imgbench', 'dashboard', '--port', sys.argv[1], '--results', sys.argv[2]]; "
        "app()"
    )
    process = subprocess.Popen(
        [sys.executable, "-c", cli, str(port), str(tmp_path)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 90
        while not _answers(port):
            assert process.poll() is None, f"the dashboard exited with {process.returncode}"
            assert time.monotonic() < deadline, "the dashboard did not answer within 90 s"
            time.sleep(0.5)
        stop_and_check_gone(process, port)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
