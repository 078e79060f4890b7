"""Helpers of the object-store tests (skipped where `weed` is missing); the shared server is
tests/conftest.py's ``s3_server``."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd
import psutil
import pytest

from imgbench.objectstore.server import S3Server, weed_missing

REPO = Path(__file__).resolve().parents[2]
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
    assert server.socket_dir is None or not server.socket_dir.exists()


def run_s3_session(
    out: Path,
    bench: Path,
    profile: tuple[str, str],
    args: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    timeout: int = 300,
) -> tuple[pd.DataFrame, int]:
    """`pytest BENCH ARGS` in a fresh session under the profile ``(name, pyproject text)``; its rows
    and exit code. Checks that its servers, their data folders and its built stores are gone."""
    from tests.conftest import run_pytest

    scratch = out / "scratch"
    scratch.mkdir()
    name, text = profile
    (out / "pyproject.toml").write_text(text)
    # the session's servers keep their data folders here, and only there; under /tmp, not `out`:
    # a pytest-xdist worker's test folder is too long a TMPDIR for the DataLoader's Unix socket
    tmp = Path(tempfile.mkdtemp(prefix="imgbench-tmp-", dir="/tmp"))
    with contextlib.ExitStack() as cleanup, pytest.MonkeyPatch.context() as patch:
        cleanup.callback(shutil.rmtree, tmp, ignore_errors=True)
        patch.setenv("PYTHONPATH", os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
        patch.setenv("IMGBENCH_FORMATS_DIR", str(scratch))
        patch.setenv("TMPDIR", str(tmp))
        for key, value in (env or {}).items():
            patch.setenv(key, value)
        proc = run_pytest(
            [
                str(bench),
                f"--imgbench-results={out / 'results'}",
                f"--imgbench-profile={name}",
                "--imgbench-host-gate=0",  # correctness, not timing: no re-timed rounds
                "--imgbench-process=in-process",  # and no worker server to start and fork
                *args,
            ],
            cwd=out,
            timeout=timeout,
        )
        assert weed_processes(str(tmp)) == [], "an S3 server outlived the session"
        assert [p.name for p in tmp.iterdir() if p.name.startswith("imgbench-s3-")] == []
    assert list(scratch.iterdir()) == []
    assert proc.returncode in (0, 1), proc.stdout[-4000:] + proc.stderr[-3000:]
    (parquet,) = (out / "results").glob("*.parquet")
    frame = pd.read_parquet(parquet)
    frame["extra"] = frame["extra_json"].map(lambda s: json.loads(s) if isinstance(s, str) else {})
    frame["params"] = frame["params_json"].map(json.loads)
    return frame, proc.returncode
