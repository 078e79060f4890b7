"""`pytest benches/bench_formats.py` with a small MDS profile, as `imgbench run` starts a session,
and the one mosaic-env session that tests/formats/test_mosaic_env.py and tests/envs/test_envs.py
read (with tests/formats/mosaic_probe.py's checks after its cases: one mosaic-env interpreter
where there were five)."""

from __future__ import annotations

import json
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from imgbench.envs import env_dir
from imgbench.objectstore.server import ENDPOINT_ENV
from imgbench.paths import repo_root
from tests.formats.mosaic_probe import PROBE_ENV
from tests.formats.photos import save_photos
from tests.objectstore.conftest import weed_processes

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "benches" / "bench_formats.py"
SHM_NAME = re.compile(
    r"^\d{6}_(locals|barrier|next_epoch|cache_usage|shard_states|shard_access_times|resume"
    r"|epoch_shape|epoch_data)$"
)

PROFILE = """
[tool.imgbench.profiles.mdstest]
base = "quick"
rounds = 2
warmup_rounds = 1

[tool.imgbench.profiles.mdstest.format]
libraries = ["mds"]
storages = ["local", "s3"]
orders = ["sequential", "shuffled"]
caches = ["warm", "cold"]
payloads = ["bytes"]
raw_ceiling = false
"""


def mosaic_python() -> Path:
    root = repo_root()
    assert root is not None
    python = env_dir("mosaic", root) / "bin" / "python"
    if not python.exists():
        pytest.skip(
            "mosaic env not built here (`imgbench env create mosaic`; make mosaic-env builds it)"
        )
    return python


def streaming_shm() -> set[str]:
    return {p.name for p in Path("/dev/shm").iterdir() if SHM_NAME.match(p.name)}


def read_rows(results: Path) -> pd.DataFrame:
    (parquet,) = results.glob("*.parquet")
    frame = pd.read_parquet(parquet)
    frame["extra"] = frame["extra_json"].map(lambda s: json.loads(s) if isinstance(s, str) else {})
    frame["params"] = frame["params_json"].map(json.loads)
    return frame


def bench(
    out: Path,
    python: str,
    *extra: str,
    mark_root: bool = False,
    env_extra: dict[str, str] | None = None,
) -> tuple[subprocess.CompletedProcess[str], Path, Path]:
    """bench_formats.py with the ``mdstest`` profile under ``out``: the finished process, its
    formats' build folder and its TMPDIR (for what they still hold)."""
    (out / "pyproject.toml").write_text(PROFILE)
    if mark_root:  # this folder is the checkout: no .venvs/mosaic here
        (out / "benches").mkdir()
    scratch, tmp = out / "scratch", out / "tmp"
    scratch.mkdir()
    tmp.mkdir()
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
        "IMGBENCH_FORMATS_DIR": str(scratch),
        "TMPDIR": str(tmp),
        **(env_extra or {}),
    }
    proc = subprocess.run(
        [
            python,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            str(BENCH),
            f"--imgbench-results={out / 'results'}",
            "--imgbench-profile=mdstest",
            "--imgbench-host-gate=0",  # correctness, not timing: no re-timed rounds
            *extra,
        ],
        cwd=out,
        capture_output=True,
        text=True,
        timeout=420,
        check=False,
        env=env,
    )
    return proc, scratch, tmp


@dataclass(frozen=True)
class MosaicRun:
    """What the mosaic env's session left: its rows' folder, the probe's findings, leftovers."""

    dataset: Path
    results: Path
    returncode: int
    output: str
    probe: dict[str, Any]
    endpoint_url: str  # the S3 server the session and the probe used
    weed_left: list[str]  # S3 servers that outlived the session
    scratch_left: list[str]
    filelocks_left: list[str]  # streaming's file locks in the session's TMPDIR
    shm_left: list[str]  # streaming's shared memory that was not there before

    def rows(self) -> pd.DataFrame:
        return read_rows(self.results)


_RUN: dict[str, MosaicRun] = {}


def mosaic_run(factory: pytest.TempPathFactory, s3_env: dict[str, str]) -> MosaicRun:
    """The mosaic env's session of the MDS cases (in its own process: no worker server to start
    in the env) on the test process's S3 server, with the probe after its cases; once per test
    process (a later call reads the first one's outcome)."""
    if "run" in _RUN:
        return _RUN["run"]
    python = mosaic_python()
    out = factory.mktemp("mosaic-session")
    dataset = save_photos(out / "photos")
    probe = out / "probe"
    probe.mkdir()
    shm_before = streaming_shm()
    setting = json.dumps({"out": str(probe), "dataset": str(dataset)})
    proc, scratch, tmp = bench(
        out,
        str(python),
        f"--dataset={dataset}",
        "--imgbench-env=mosaic",
        "--imgbench-process=in-process",
        "-p",
        "tests.formats.mosaic_probe",
        env_extra={**s3_env, PROBE_ENV: setting},
    )
    found = probe / "probe.json"
    _RUN["run"] = MosaicRun(
        dataset=dataset,
        results=out / "results",
        returncode=proc.returncode,
        output=proc.stdout[-4000:] + proc.stderr[-3000:],
        probe=json.loads(found.read_text()) if found.exists() else {},
        endpoint_url=json.loads(s3_env[ENDPOINT_ENV])["url"],
        weed_left=[str(p.pid) for p in weed_processes(str(tmp))],
        scratch_left=sorted(p.name for p in scratch.iterdir()),
        filelocks_left=sorted(p.name for p in tmp.glob("*_filelock")),
        shm_left=sorted(streaming_shm() - shm_before),
    )
    return _RUN["run"]
