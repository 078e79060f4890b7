"""A real SeaweedFS S3 server for the object-store tests (skipped where `weed` is missing)."""

from __future__ import annotations

from collections.abc import Iterator

import psutil
import pytest

from imgbench.objectstore.server import S3Server, start_server, weed_missing

needs_weed = pytest.mark.skipif(weed_missing() is not None, reason=weed_missing() or "")


def weed_processes(under: str = "imgbench-s3-") -> list[psutil.Process]:
    """`weed` processes whose command line names ``under`` (a data folder, or its prefix).

    Other sessions on this machine may run servers of their own at the same time: tests look
    only for their own (their data folder, or a TMPDIR of their own)."""
    found = []
    for proc in psutil.process_iter(["pid", "name", "cmdline"]):
        cmdline = proc.info.get("cmdline") or []
        if proc.info.get("name") == "weed" and any(under in part for part in cmdline):
            found.append(proc)
    return found


def assert_gone(server: S3Server) -> None:
    """The server's process, data folder and sockets are all gone."""
    assert not psutil.pid_exists(server.pid) or (
        psutil.Process(server.pid).status() == psutil.STATUS_ZOMBIE
    ), f"weed pid {server.pid} still runs"
    assert weed_processes(str(server.data_dir)) == []
    assert not server.data_dir.exists(), f"{server.data_dir} left behind"


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    """One server for the tests that share it (start-up costs ~4-10 s on 2 busy cores); its
    normal stop is checked when the session ends."""
    if reason := weed_missing():
        pytest.skip(reason)
    with start_server("imgbench-tests") as server:
        yield server
    assert_gone(server)
