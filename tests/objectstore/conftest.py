"""A real SeaweedFS S3 server for the object-store tests (skipped where `weed` is missing)."""

from __future__ import annotations

from collections.abc import Iterator

import psutil
import pytest

from imgbench.objectstore.server import S3Server, start_server, weed_missing

needs_weed = pytest.mark.skipif(weed_missing() is not None, reason=weed_missing() or "")


def weed_processes() -> list[psutil.Process]:
    """Every `weed` process of this machine that imgbench started (its data folder's prefix)."""
    found = []
    for proc in psutil.process_iter(["pid", "name", "cmdline"]):
        cmdline = proc.info.get("cmdline") or []
        if proc.info.get("name") == "weed" and any("imgbench-s3-" in part for part in cmdline):
            found.append(proc)
    return found


def assert_gone(server: S3Server) -> None:
    """The server's process, data folder and sockets are all gone."""
    assert not psutil.pid_exists(server.pid) or (
        psutil.Process(server.pid).status() == psutil.STATUS_ZOMBIE
    ), f"weed pid {server.pid} still runs"
    assert server.pid not in {p.pid for p in weed_processes()}
    assert not server.data_dir.exists(), f"{server.data_dir} left behind"


@pytest.fixture(scope="module")
def s3_server() -> Iterator[S3Server]:
    """One server for a test module (start-up costs ~5-10 s)."""
    if reason := weed_missing():
        pytest.skip(reason)
    with start_server("imgbench-tests") as server:
        yield server
    assert_gone(server)
