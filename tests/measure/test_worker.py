"""Each case in a fresh fork of a pristine server: the row says so, and it is true.

A toy reader registered by entry point (tests/measure/conftest.py's probe, as in
tests/test_extending.py) reports what its process looks like from inside: a module-level counter
(a fresh process per case sees 1 every time), the allocator variables and the hash seed. Another
toy reader crashes its process. The engine's properties are checked on the ``Manager`` with a real
worker server; the runner's (its environment, stopping a run) in real sessions.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pandas as pd
import pytest

from imgbench.controls import WORKER_IMPORTS_ENV
from imgbench.measure.allocator import GLIBC_TUNED, AllocatorUnavailableError, allocator
from imgbench.measure.layout import ADDR_NO_RANDOMIZE
from imgbench.measure.manager import Failed, Skipped
from imgbench.measure.rounds import Measurement
from tests.measure.conftest import Measure, seen_by_probe
from tests.measure.test_layout import layout_can_be_fixed

ROOT = Path(__file__).resolve().parents[2]


def _run(
    tmp_path: Path, dataset: Path, env: dict[str, str], *args: str, profile: str = "probe"
) -> pd.DataFrame:
    import subprocess

    results = tmp_path / "results"
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            str(ROOT / "benches" / "bench_readers.py"),
            f"--imgbench-profile={profile}",
            f"--dataset={dataset}",
            f"--imgbench-results={results}",
            *args,
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode in (0, 1), out.stdout[-3000:] + out.stderr[-2000:]
    (path,) = results.glob("*.parquet")
    return pd.read_parquet(path)


def test_every_case_runs_in_a_fresh_process_with_the_recorded_environment(
    tmp_path: Path, tiny_dataset: Path, probe_env: dict[str, str]
) -> None:
    # the probe profile's formats stage needs lmdb: a server told to import only what the
    # session selected (the option, not the suite's $IMGBENCH_WORKER_IMPORTS) never imports it
    # (test_worker_history.py checks the profile's imports, the default)
    env = {**probe_env, "PROBE_MODULES": "lmdb"}
    env.pop(WORKER_IMPORTS_ENV, None)
    rows = _run(
        tmp_path,
        tiny_dataset,
        env,
        "--imgbench-allocator=glibc-tuned",
        "--imgbench-host-gate=1.3",  # every kept round says what the host was doing
        "--imgbench-worker-imports=selected",
        "-p",
        "late_env_plugin",
    )
    probe = rows[rows["library"] == "probe"]
    assert list(probe["status"]) == ["ok", "ok"]  # jpeg and png
    assert set(probe["worker_imports"]) == {"selected"}
    assert set(probe["process_model"]) == {"worker"}
    assert set(probe["allocator"]) == {"glibc-tuned"}
    for text in probe["allocator_env"]:
        assert json.loads(text) == GLIBC_TUNED
    seen = [json.loads(line) for line in (tmp_path / "probe.log").read_text().splitlines()]
    # each case's process decoded for the first time: nothing carried over (a case that built
    # the session's reference decodes ran again in a fresh fork: one more process)
    again = sum(
        bool(json.loads(t).get("measured_again_after_building")) for t in probe["extra_json"]
    )
    assert len(seen) == 2 + again
    assert len({s["pid"] for s in seen}) == len(seen) and os.getpid() not in {
        s["pid"] for s in seen
    }
    for s in seen:  # what the row says is what the process had
        assert s["hash_seed"] == "0" and s["malloc"] == GLIBC_TUNED and s["ld_preload"] == ""
        # the session's starting environment, whatever the runner set later; a fixed-width pid
        assert s["late"] is None and len(s["runner"]) == 10
        assert s["modules"] == []  # lmdb: not selected, not imported
    if layout_can_be_fixed():  # the default: randomisation off in the measuring process
        assert set(probe["address_layout"]) == {"fixed"}
        assert all(s["personality"] & ADDR_NO_RANDOMIZE for s in seen)
    else:
        assert set(probe["address_layout"]) == {"randomized"}
    assert (probe["page_faults_minor_per_image"] >= 0).all()
    for _, row in probe.iterrows():  # every kept round says what the host was doing
        assert len(row["host_ratios"]) == len(row["samples_s"]) == row["rounds"]
        assert row["host_probe_reference_s"] > 0 and row["host_max_ratio"] == 1.3


def test_a_crashing_case_is_a_failed_row_and_the_next_case_runs(measure: Measure) -> None:
    outcomes = measure(("crash", "pillow"), ("jpeg", "png"))
    crash = [o for c, o in outcomes if c.library == "crash"]
    assert crash and all(isinstance(o, Failed) for o in crash)
    reasons = [o.reason for o in crash]  # type: ignore[union-attr]
    assert all("killed by signal SIGSEGV" in r for r in reasons), reasons
    pillow = [o for c, o in outcomes if c.library == "pillow"]
    assert pillow and all(isinstance(o, Measurement) for o in pillow)
    assert {o.process_model for o in pillow} == {"worker"}  # type: ignore[union-attr]


def test_in_process_is_a_choice_and_says_so(tmp_path: Path, measure: Measure) -> None:
    outcomes = measure(("probe",), ("jpeg", "png"), process_model="in-process")
    assert len(outcomes) == 2 and all(isinstance(o, Measurement) for _, o in outcomes)
    assert {o.process_model for _, o in outcomes} == {"in-process"}  # type: ignore[union-attr]
    seen = seen_by_probe(tmp_path)
    # one process, this one: the second case found the library already used
    assert [s["pid"] for s in seen] == [os.getpid()]


def test_a_randomized_layout_is_a_choice_and_says_so(tmp_path: Path, measure: Measure) -> None:
    ((_, outcome),) = measure(("probe",), ("jpeg",), address_layout="randomized")
    assert isinstance(outcome, Measurement) and outcome.address_layout == "randomized"
    seen = seen_by_probe(tmp_path)
    assert seen and not any(s["personality"] & ADDR_NO_RANDOMIZE for s in seen)


@pytest.mark.parametrize("name", ["jemalloc", "tcmalloc"])
def test_preloaded_allocators_are_used_or_skipped_with_the_package_to_install(
    tmp_path: Path, measure: Measure, name: str
) -> None:
    ((_, outcome),) = measure(("probe",), ("jpeg",), allocator=name)
    try:
        chosen = allocator(name)
    except AllocatorUnavailableError as exc:
        assert isinstance(outcome, Skipped) and "apt-get install" in outcome.reason, str(exc)
        return
    assert isinstance(outcome, Measurement) and outcome.allocator == name
    assert all(s["ld_preload"] == chosen.environment["LD_PRELOAD"] for s in seen_by_probe(tmp_path))


def test_calibration_and_run_rows_agree_between_models(measure: Measure) -> None:
    """The same quick reader case, in a worker and in-process: same work per round."""
    found = []
    for model in ("worker", "in-process"):
        ((case, outcome),) = measure(
            ("pillow",),
            ("jpeg",),
            profile="quick",
            process_model=model,
            host_max_ratio=1.3,  # the gate's own check: on in both models
        )
        assert isinstance(outcome, Measurement), outcome
        found.append((case, outcome))
    (case_w, worker), (case_h, here) = found
    assert worker.process_model == "worker" and here.process_model == "in-process"
    assert case_w.case_id == case_h.case_id
    assert worker.images_per_round % 8 == 0 and here.images_per_round % 8 == 0
    assert worker.extra["verified_images"] == 8
    for row in (worker, here):  # both models time rounds the same way: gated, host recorded
        assert row.host_max_ratio == 1.3 and len(row.host_ratios) == row.rounds


def _hung_case(log: Path, timeout_s: float = 120) -> dict[str, int]:
    """The pids of the hung case's process and of the process it started, once both exist."""
    import time

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if log.exists():
            for line in log.read_text().splitlines():
                seen = json.loads(line)
                if "helper" in seen:
                    return seen
        time.sleep(0.2)
    raise AssertionError(f"the hung case did not start within {timeout_s:g} s")


def _gone(pids: list[int], timeout_s: float = 30) -> list[int]:
    import psutil

    _, alive = psutil.wait_procs(
        [p for p in map(_process, pids) if p is not None], timeout=timeout_s
    )
    return [p.pid for p in alive]


def _process(pid: int):  # type: ignore[no-untyped-def]
    import psutil

    try:
        return psutil.Process(pid)
    except psutil.NoSuchProcess:
        return None


@pytest.mark.parametrize("how", ["SIGTERM to imgbench run", "SIGKILL to the pytest session"])
def test_stopping_a_run_leaves_no_server_case_or_case_process_behind(
    tmp_path: Path, tiny_dataset: Path, probe_env: dict[str, str], how: str
) -> None:
    """A run stopped from outside (a CI timeout, a service manager) takes every process with it."""
    import signal
    import subprocess

    import psutil

    run = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "imgbench.cli",
            "run",
            "--profile=hang",
            f"--dataset={tiny_dataset}",
            f"--results={tmp_path / 'results'}",
            "--no-envs",
            "-k",
            "hang",
        ],
        cwd=ROOT,
        env=probe_env,
        stdout=(tmp_path / "run.log").open("w"),
        stderr=subprocess.STDOUT,
    )
    try:
        try:
            hung = _hung_case(tmp_path / "probe.log")
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{(tmp_path / 'run.log').read_text()[-3000:]}") from None
        tree = psutil.Process(run.pid).children(recursive=True)
        session = next(p for p in tree if "pytest" in " ".join(p.cmdline()))
        server = next(p for p in tree if "serve(" in " ".join(p.cmdline()))
        assert {hung["case"], hung["helper"]} <= {p.pid for p in tree}
        if how.startswith("SIGTERM"):
            run.send_signal(signal.SIGTERM)
        else:
            session.kill()
        left = _gone([session.pid, server.pid, hung["case"], hung["helper"]])
        assert left == [], f"{how}: still running: {left}"
        if how.startswith("SIGTERM"):
            assert run.wait(timeout=30) != 0  # stopped, not a success
    finally:
        run.kill()
        run.wait()
