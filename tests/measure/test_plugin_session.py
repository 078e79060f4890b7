"""The pytest plugin end to end, in real pytest subprocesses on a real image folder."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from tests.conftest import run_pytest

BENCH = """
import os, signal
import pytest
from imgbench.measure.case import Case, Workload


def ok_prepare(ctx, case):
    entries = ctx.entries("jpeg")
    return Workload(items=[ctx.path(e).read_bytes() for e in entries], fn=len,
                    bytes_per_round=1000, megapixels_per_round=0.5)


def failing_prepare(ctx, case):
    raise ValueError("corrupt input: broken.jpg is truncated")


def killing_prepare(ctx, case):
    os.kill(os.getpid(), getattr(signal, os.environ.get("IMGBENCH_TEST_SIGNAL", "SIGKILL")))
    return ok_prepare(ctx, case)


CASES = [
    Case(stage="test", library="alpha", variant="ok", prepare=ok_prepare, params={"threads": 1}),
    Case(stage="test", library="beta", variant="boom", prepare=failing_prepare),
    Case(stage="test", library="gamma", variant="missing", prepare=ok_prepare,
         requires=("no_such_module_xyz",)),
    Case(stage="test", library="delta", variant="ok", prepare=ok_prepare, params={"threads": None}),
    Case(stage="test", library="simd", variant="ok", prepare=ok_prepare, environment="pillow-simd"),
]
if os.environ.get("IMGBENCH_TEST_KILL"):
    CASES.insert(2, Case(stage="test", library="killer", variant="x", prepare=killing_prepare))


@pytest.mark.parametrize("case", CASES, ids=[c.test_id for c in CASES])
def test_case(imgbench, case):
    imgbench.measure(case)
"""


def _setup(tmp_path: Path) -> Path:
    (tmp_path / "test_fake_bench.py").write_text(BENCH)
    return tmp_path / "results"


def _args(tiny_dataset: Path, results: Path) -> list[str]:
    return [
        "test_fake_bench.py",
        f"--dataset={tiny_dataset}",
        f"--imgbench-results={results}",
        "--imgbench-profile=quick",
    ]


@pytest.fixture(scope="module")
def plain_session(
    tmp_path_factory: pytest.TempPathFactory, tiny_dataset: Path
) -> tuple[subprocess.CompletedProcess, pd.DataFrame]:
    """The fake bench's session (ok, failing, missing-module and another environment's cases):
    its process and its rows, by library."""
    tmp_path = tmp_path_factory.mktemp("plugin-session")
    results = _setup(tmp_path)
    proc = run_pytest(_args(tiny_dataset, results), cwd=tmp_path)
    files = list(results.glob("*.parquet"))
    assert len(files) == 1, proc.stdout + proc.stderr
    return proc, pd.read_parquet(files[0]).set_index("library")


def test_failing_case_beside_passing_ones(
    plain_session: tuple[subprocess.CompletedProcess, pd.DataFrame],
) -> None:
    proc, frame = plain_session
    assert proc.returncode == 1, proc.stdout + proc.stderr  # one case failed; the run went on
    assert frame.loc["alpha", "status"] == "ok"
    assert frame.loc["delta", "status"] == "ok"
    assert frame.loc["beta", "status"] == "failed"
    assert "broken.jpg is truncated" in frame.loc["beta", "reason"]
    assert frame.loc["gamma", "status"] == "skipped"
    assert "no_such_module_xyz" in frame.loc["gamma", "reason"]
    ok = frame.loc["alpha"]
    assert ok["images_per_round"] == 8 * ok["round_repeats"]
    assert len(ok["samples_s"]) == ok["rounds"] == 5 and ok["min_case_s"] == 0.0  # the profile's
    assert ok["images_per_s_median"] == ok["images_per_round"] / pd.Series(ok["samples_s"]).median()
    assert ok["images_per_s_q1"] <= ok["images_per_s_median"] <= ok["images_per_s_q3"]
    assert ok["threads"] == 1 and pd.isna(frame.loc["delta", "threads"])
    assert json.loads(ok["thread_env"])["OMP_NUM_THREADS"] == "1"
    assert ok["dataset_images"] == 10 and len(ok["dataset_fingerprint"]) >= 8
    assert ok["peak_rss_bytes"] > 10_000_000
    assert ok["machine_id"] and ok["cpu_cores_logical"] >= 1
    assert ok["run_group"] == ok["run_id"]  # a lone pytest session is its own group
    assert "imgbench results" in proc.stdout and "skipped x1" in proc.stdout


def test_killed_session_keeps_finished_cases(tmp_path: Path, tiny_dataset: Path) -> None:
    results = _setup(tmp_path)
    import os
    import subprocess
    import sys

    env = {**os.environ, "IMGBENCH_TEST_KILL": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *_args(tiny_dataset, results)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode < 0 or proc.returncode == 137  # killed by SIGKILL
    files = list(results.glob("*.parquet"))
    assert len(files) == 1
    table = pq.read_table(files[0])  # readable: the kill never leaves half a file
    assert sorted(table.column("library").to_pylist()) == ["alpha", "beta"]
    assert not list(results.glob("*.tmp"))


def test_ctrl_c_keeps_finished_cases(tmp_path: Path, tiny_dataset: Path) -> None:
    import os
    import subprocess
    import sys

    results = _setup(tmp_path)
    env = {**os.environ, "IMGBENCH_TEST_KILL": "1", "IMGBENCH_TEST_SIGNAL": "SIGINT"}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *_args(tiny_dataset, results)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 2, proc.stdout  # pytest's "interrupted"
    (path,) = results.glob("*.parquet")
    assert sorted(pd.read_parquet(path)["library"]) == ["alpha", "beta"]


def test_missing_dataset_path_is_one_clear_line(tmp_path: Path) -> None:
    results = _setup(tmp_path)
    proc = run_pytest(
        ["test_fake_bench.py", "--dataset=/nonexistent/photos", f"--imgbench-results={results}"],
        cwd=tmp_path,
    )
    assert proc.returncode == 4  # pytest usage error
    assert "dataset path does not exist: /nonexistent/photos" in proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout


def test_other_environment_cases_write_no_rows(
    plain_session: tuple[subprocess.CompletedProcess, pd.DataFrame],
) -> None:
    """A case of another environment is left to that environment's session: no skipped row in
    this session's file, one summary line saying where it runs, and no failure (the session's
    one failed case is beta's)."""
    proc, frame = plain_session
    assert sorted(frame.index) == ["alpha", "beta", "delta", "gamma"]
    assert "1 cases run in the pillow-simd environment" in proc.stdout
    summary = proc.stdout.strip().splitlines()[-1]
    assert "1 failed" in summary and "error" not in summary, summary


def test_registered_cases_of_other_environments_are_not_collected(
    tmp_path: Path, tiny_dataset: Path
) -> None:
    """The default profile's readers include pillow-simd and TensorFlow cases: the main session
    does not collect them, so the skipped rows it writes carry only real reasons."""
    (tmp_path / "bench_read.py").write_text(
        "import pytest\n\npytestmark = pytest.mark.imgbench(stage='read')\n\n\n"
        "def test_read(imgbench, imgbench_case):\n    imgbench.measure(imgbench_case)\n"
    )
    results = tmp_path / "results"
    proc = run_pytest(
        [
            "bench_read.py",
            f"--dataset={tiny_dataset}",
            f"--imgbench-results={results}",
            "--imgbench-profile=default",
            "--imgbench-rounds=2",
            "--imgbench-process=in-process",  # what is collected is the question, not the worker
            "-k",
            "simplejpeg-decode-jpeg-jpeg-memory-t1 or pillow-simd-open-convert-jpeg-memory-t1",
        ],
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (path,) = results.glob("*.parquet")
    frame = pd.read_parquet(path)
    assert set(frame["environment"]) == {"main"}
    assert not frame["reason"].fillna("").str.contains("environment").any()
    assert "cases run in the pillow-simd environment" in proc.stdout
    assert "cases run in the tensorflow environment" in proc.stdout


def test_a_session_whose_cases_are_all_deselected_says_nothing_about_saving(
    tmp_path: Path, tiny_dataset: Path
) -> None:
    results = _setup(tmp_path)
    proc = run_pytest(
        [*_args(tiny_dataset, results), "-k", "no_such_case", "--benchmark-save=empty"],
        cwd=tmp_path,
    )
    assert proc.returncode == 5, proc.stdout[-2000:]  # pytest's "no tests ran"
    assert "deselected" in proc.stdout
    assert "Not saving anything" not in proc.stdout + proc.stderr
