"""A folder of real JPEGs (made with Pillow) in two class folders, and a way to run the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import psutil
import pytest

from tests.conftest import write_photo_like
from tests.profiling.tf_env_run import PIPELINES, QUICK, REPO, profile_env, tf_env_run

__all__ = ["PIPELINES", "QUICK", "REPO"]  # the test modules import them from here


def children_left(before: set[int]) -> list[psutil.Process]:
    """This process's descendants that were not there before the test: what the test left behind.

    (A multiprocessing forkserver that an earlier test's code started lives as long as pytest: it
    is not this test's.)"""
    return [p for p in psutil.Process().children(recursive=True) if p.pid not in before]


def children_now() -> set[int]:
    return {p.pid for p in psutil.Process().children(recursive=True)}


@pytest.fixture(scope="session")
def photos(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """24 JPEGs of 320x240, q90, in two class folders."""
    root = tmp_path_factory.mktemp("profile-photos")
    for i in range(24):
        write_photo_like(root / f"class_{i % 2}" / f"photo_{i:02d}.jpg", (320, 240), seed=i)
    return root


def run_profile(
    args: list[str], results: Path, timeout: float = 240, cwd: Path = REPO
) -> subprocess.CompletedProcess[str]:
    """``imgbench profile ARGS --results RESULTS`` in a fresh process (from the repository root
    unless ``cwd``), with this checkout's imgbench."""
    return subprocess.run(
        [sys.executable, "-m", "imgbench.cli", "profile", *args, "--results", str(results)],
        cwd=cwd,
        env=profile_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def invoke_profile(
    args: list[str], results: Path, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """``imgbench profile ARGS --results RESULTS`` through the typer app in this process (its
    output as from a 160-column terminal; an exception's traceback appended to stderr), from
    ``cwd`` if given. A fresh interpreter costs 3-5 s of imports here; `python -m imgbench.cli
    profile` as a user types it is run_profile's, in test_tf_data.py and for the Pillow example
    of test_cli.py. Modules imported from ``cwd`` (a user's own file) are forgotten after."""
    import traceback

    from typer.testing import CliRunner

    from imgbench.cli import app

    here = Path.cwd()
    path_before = list(sys.path)
    if cwd is not None:
        os.chdir(cwd)
    try:
        done = CliRunner().invoke(
            app,
            ["profile", *args, "--results", str(results)],
            env={"COLUMNS": "160", "NO_ALBUMENTATIONS_UPDATE": "1"},
        )
    finally:
        os.chdir(here)
        sys.path[:] = path_before
        if cwd is not None:
            for name, module in list(sys.modules.items()):
                if str(getattr(module, "__file__", None) or "").startswith(str(cwd)):
                    del sys.modules[name]
    stderr = done.stderr
    if done.exception is not None and not isinstance(done.exception, SystemExit):
        stderr += "".join(traceback.format_exception(done.exception))
    return subprocess.CompletedProcess(args, done.exit_code, done.stdout, stderr)


@pytest.fixture(scope="session")
def tf_profiles(
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, tuple[subprocess.CompletedProcess[str], Path]]:
    """name -> (the profile's exit code and output, its results folder), from the TensorFlow
    env's one interpreter (tests/profiling/tf_env_run.py; skipped where the env is not built)."""
    run = tf_env_run(tmp_path_factory)
    assert run.returncode == 0 and run.found, run.output
    found = run.found["profiles"]
    return {
        name: (subprocess.CompletedProcess(run.jobs[name], **found[name]), run.results[name])
        for name in run.jobs
    }


def read_rows(results: Path) -> pd.DataFrame:
    files = sorted(results.glob("*.parquet"))
    assert len(files) == 1, files
    return pd.read_parquet(files[0])


def extra(row: Any) -> dict[str, Any]:
    value: dict[str, Any] = json.loads(row["extra_json"])
    return value


def processes_mentioning(text: str) -> list[str]:
    """Processes whose command line contains ``text`` (a test's own temporary folder)."""
    found = []
    for proc in psutil.process_iter(["pid", "cmdline"]):
        cmdline = " ".join(proc.info.get("cmdline") or [])
        if text in cmdline and proc.pid != os.getpid():
            found.append(f"{proc.pid}: {cmdline[:200]}")
    return found
