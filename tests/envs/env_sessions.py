"""One bench session run for real in an isolated env, on a few photos: what its rows say.

A small profile declared in a pyproject.toml (``IMGBENCH_PYPROJECT``): the default profile's
plans (so its environment pipelines), one transform and one pipeline, batches of four, three
rounds. The session selects its env's own cases; ``keyword`` narrows them further.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from imgbench.envs import env_dir
from imgbench.paths import repo_root
from tests.envs.env_probe import PROBE_ENV

REPO = Path(__file__).resolve().parents[2]
BENCHES = REPO / "benches"

PROFILE = """
[tool.imgbench.profiles.env-e2e]
base = "default"
rounds = 2  # correctness rows: no assertion reads a median of several rounds
warmup_rounds = 1
max_images = 10
host_budget_s = 0.0
[tool.imgbench.profiles.env-e2e.augment]
transforms = ["hflip"]
pipelines = ["train-classification"]
pipeline_threads_default = false
batch_sizes = []
max_images = 4
budget_s = 0.5
[tool.imgbench.profiles.env-e2e.loader]
batch_size = 4
"""


def env_python(name: str) -> Path:
    """The env's interpreter; the test skips, naming the command, when the env is not built."""
    root = repo_root()
    assert root is not None
    python = env_dir(name, root) / "bin" / "python"
    if not python.exists():
        pytest.skip(f"{name} env not built here (`imgbench env create {name}`)")
    return python


def run_session(
    name: str, out: Path, dataset: Path, keyword: str, probe: dict[str, Any] | None = None
) -> pd.DataFrame:
    """The augment and loader benches in env ``name``; its rows (the session must pass). With
    ``probe`` (tests/envs/env_probe.py's setting, less its ``out``), what the probe found after
    the cases is in ``out/probe/probe.json``."""
    python = env_python(name)
    (out / "pyproject.toml").write_text(PROFILE)
    env = {**os.environ, "IMGBENCH_PYPROJECT": str(out / "pyproject.toml")}
    plugin: list[str] = []
    if probe is not None:
        (out / "probe").mkdir()
        env[PROBE_ENV] = json.dumps({**probe, "out": str(out / "probe")})
        env["PYTHONPATH"] = os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])
        plugin = ["-p", "tests.envs.env_probe"]
    proc = subprocess.run(
        [
            str(python),
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            str(BENCHES / "bench_augment.py"),
            str(BENCHES / "bench_loaders.py"),
            f"--imgbench-env={name}",
            "--imgbench-profile=env-e2e",
            f"--dataset={dataset}",
            f"--imgbench-results={out / 'results'}",
            # correctness, not timing: measured in the session's process (no worker server to
            # start and fork in the env; the main env's sessions test the worker path)
            "--imgbench-process=in-process",
            "-k",
            keyword,
            *plugin,
        ],
        cwd=out,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    frames = [pd.read_parquet(p) for p in sorted((out / "results").glob("*.parquet"))]
    assert frames, proc.stdout[-3000:]
    return pd.concat(frames, ignore_index=True)
