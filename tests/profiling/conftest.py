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
from tests.envs.env_sessions import env_python

REPO = Path(__file__).resolve().parents[2]
PIPELINES = "tests.profiling.pipelines"


def children_left(before: set[int]) -> list[psutil.Process]:
    """This process's descendants that were not there before the test: what the test left behind.

    (A multiprocessing forkserver that an earlier test's code started lives as long as pytest: it
    is not this test's.)"""
    return [p for p in psutil.Process().children(recursive=True) if p.pid not in before]


def children_now() -> set[int]:
    return {p.pid for p in psutil.Process().children(recursive=True)}


# short phases: each configuration takes a few seconds. (1 s of samples: 95-120 here, and the
# shares the tests ask for, decode + augment > 0.5, read 0.93-0.97 with 1.5 s; was 1 / 0.5 / 1.5)
QUICK = ["--seconds", "0.5", "--au-seconds", "0.25", "--sample-seconds", "1"]


@pytest.fixture(scope="session")
def photos(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """24 JPEGs of 320x240, q90, in two class folders."""
    root = tmp_path_factory.mktemp("profile-photos")
    for i in range(24):
        write_photo_like(root / f"class_{i % 2}" / f"photo_{i:02d}.jpg", (320, 240), seed=i)
    return root


def _profile_env() -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)]),
        "NO_ALBUMENTATIONS_UPDATE": "1",
        "COLUMNS": "160",
    }


def run_profile(
    args: list[str], results: Path, timeout: float = 240, cwd: Path = REPO
) -> subprocess.CompletedProcess[str]:
    """``imgbench profile ARGS --results RESULTS`` in a fresh process (from the repository root
    unless ``cwd``), with this checkout's imgbench."""
    return subprocess.run(
        [sys.executable, "-m", "imgbench.cli", "profile", *args, "--results", str(results)],
        cwd=cwd,
        env=_profile_env(),
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


# The TensorFlow environment's profiles the Keras and tf.data tests read, as `imgbench profile
# ARGS` (its typer command, parsed and printed as from a terminal) in one interpreter of that env:
# a TensorFlow start each cost 4 processes (and a main-env CLI in front of each). `--env
# tensorflow` naming the env it runs in profiles in place; the main env's hand-over to the env's
# interpreter is test_tf_data.py::test_factory_returning_something_else_is_one_line's.
TF_PROFILES = r"""
import json, sys, traceback
from typer.testing import CliRunner
from imgbench.cli import app
found = {}
for name, args in json.loads(sys.argv[1]).items():
    done = CliRunner().invoke(app, ["profile", *args])
    stderr = done.stderr
    if done.exception is not None and not isinstance(done.exception, SystemExit):
        stderr += "".join(traceback.format_exception(done.exception))
    found[name] = {"returncode": done.exit_code, "stdout": done.stdout, "stderr": stderr}
print("RESULT " + json.dumps(found))
"""


def tf_jobs(photos: Path) -> dict[str, list[str]]:
    """Each profile's arguments (its ``--results`` added by the fixture)."""
    keras = [f"{PIPELINES}.keras_pydataset:make_dataset", "--kw", f"root={photos}"]
    keras_phases = [*QUICK, "--env", "tensorflow", "--no-readers"]
    tf_data = [f"{PIPELINES}.tf_data:make_dataset", "--kw", f"root={photos}"]
    tf_phases = ["--seconds", "1", "--au-seconds", "0.5", "--env", "tensorflow"]
    return {
        "keras-sweep": [
            *keras,
            *("--kw", "workers=2", "--kw", "multiprocessing=True", "--workers", "0,2"),
            *keras_phases,
            # the pool's workers live one epoch: 1.5 s of stacks sometimes caught none of them
            *("--sample-seconds", "3"),
        ],
        "keras-bad": [*keras, "--kw", "bad=True", "--workers", "0", *keras_phases],
        "tf-data-sweep": [*tf_data, "--kw", "threads=3", "--workers", "1,2", *tf_phases],
        "tf-data-bad": [*tf_data, "--kw", "bad=True", "--workers", "1", *tf_phases],
    }


@pytest.fixture(scope="session")
def tf_profiles(
    photos: Path, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, tuple[subprocess.CompletedProcess[str], Path]]:
    """name -> (the profile's exit code and output, its results folder); skipped where the
    TensorFlow env is not built (as tests/loaders/test_tensorflow_env.py)."""
    python = env_python("tensorflow")
    root = tmp_path_factory.mktemp("tf-profiles")
    jobs = {
        name: [*args, "--results", str(root / name / "results")]
        for name, args in tf_jobs(photos).items()
    }
    proc = subprocess.run(
        [str(python), "-c", TF_PROFILES, json.dumps(jobs)],
        cwd=REPO,
        env=_profile_env(),
        capture_output=True,
        text=True,
        timeout=480,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (line,) = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")]
    found = json.loads(line.removeprefix("RESULT "))
    return {
        name: (
            subprocess.CompletedProcess(jobs[name], **found[name]),
            root / name / "results",
        )
        for name in jobs
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
