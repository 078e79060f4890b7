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

REPO = Path(__file__).resolve().parents[2]
PIPELINES = "tests.profiling.pipelines"


def children_left(before: set[int]) -> list[psutil.Process]:
    """This process's descendants that were not there before the test: what the test left behind.

    (A multiprocessing forkserver that an earlier test's code started lives as long as pytest: it
    is not this test's.)"""
    return [p for p in psutil.Process().children(recursive=True) if p.pid not in before]


def children_now() -> set[int]:
    return {p.pid for p in psutil.Process().children(recursive=True)}


# short phases: each configuration takes a few seconds
QUICK = ["--seconds", "1", "--au-seconds", "0.5", "--sample-seconds", "1.5"]


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
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)]),
        "NO_ALBUMENTATIONS_UPDATE": "1",
        "COLUMNS": "160",
    }
    return subprocess.run(
        [sys.executable, "-m", "imgbench.cli", "profile", *args, "--results", str(results)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


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
