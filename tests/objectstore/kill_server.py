"""pytest plugin: SIGKILL the session's S3 server once N S3 rows are written (a lost server)."""

from __future__ import annotations

import os
import signal

import pytest

from imgbench.pytest_plugin import STATE_KEY

AFTER = int(os.environ.get("IMGBENCH_TEST_KILL_S3_AFTER", "2"))
KILLED: list[int] = []


def pytest_runtest_teardown(item: pytest.Item) -> None:
    state = item.config.stash[STATE_KEY]
    s3_rows = [r for r in state.rows if r.get("storage") == "s3"]
    if KILLED or len(s3_rows) < AFTER:
        return
    service = state.manager.services._started.get("s3")
    server = service.owner.server if service is not None else None
    if server is None:
        return
    os.kill(server.pid, signal.SIGKILL)
    KILLED.append(server.pid)
    with open(os.environ["IMGBENCH_TEST_KILLED_FILE"], "w") as handle:
        handle.write(str(server.pid))
