"""Each case in a fresh fork of a pristine server: the row says so, and it is true.

A toy reader registered by entry point (as in tests/test_extending.py) reports what its process
looks like from inside: a module-level counter (a fresh process per case sees 1 every time), the
allocator variables and the hash seed. Another toy reader crashes its process.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd
import pytest

from imgbench.measure.allocator import GLIBC_TUNED, AllocatorUnavailableError, allocator
from imgbench.measure.layout import ADDR_NO_RANDOMIZE
from tests.conftest import installed_package, run_pytest
from tests.measure.test_layout import layout_can_be_fixed

ROOT = Path(__file__).resolve().parents[2]

PROBE = '''
import io
import json
import os
import signal
import sys

import numpy as np
from PIL import Image

from imgbench.readers.base import BytesReader, ReaderSpec

CALLS = {"decode": 0}
SEEN = {}


class Probe(BytesReader):
    """A real decoder that also notes what its process looks like."""

    def decode(self, data: bytes) -> np.ndarray:
        CALLS["decode"] += 1
        if CALLS["decode"] == 1:  # the first call of this process: before any other case's
            SEEN.update(
                pid=os.getpid(),
                hash_seed=os.environ.get("PYTHONHASHSEED"),
                ld_preload=os.environ.get("LD_PRELOAD", ""),
                malloc={k: v for k, v in os.environ.items() if k.startswith("MALLOC_")},
                personality=int(open("/proc/self/personality").read(), 16),
                modules=[m for m in os.environ.get("PROBE_MODULES", "").split(",")
                         if m and m in sys.modules],
                late=os.environ.get("PROBE_LATE"),
                runner=os.environ.get("IMGBENCH_RUNNER_PID"),
            )
            with open(os.environ["PROBE_LOG"], "a") as log:
                log.write(json.dumps(SEEN) + "\\n")
        with Image.open(io.BytesIO(data)) as image:
            return np.ascontiguousarray(np.asarray(image.convert("RGB")))


class Crash(BytesReader):
    def decode(self, data: bytes) -> np.ndarray:
        os.kill(os.getpid(), signal.SIGSEGV)
        raise AssertionError("unreachable")


class Hang(BytesReader):
    """Starts a process of its own (as a DataLoader starts workers), says so, and never ends."""

    def decode(self, data: bytes) -> np.ndarray:
        import subprocess
        import sys
        import time

        helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        with open(os.environ["PROBE_LOG"], "a") as log:
            log.write(json.dumps({"case": os.getpid(), "helper": helper.pid}) + "\\n")
        time.sleep(600)
        raise AssertionError("unreachable")


PROBE = ReaderSpec(library="probe", variant="env", adapter=__name__ + ":Probe", quick=True)
CRASH = ReaderSpec(library="crash", variant="segv", adapter=__name__ + ":Crash", quick=True)
HANG = ReaderSpec(library="hang", variant="forever", adapter=__name__ + ":Hang", quick=True)
'''

PROFILE = """
[tool.imgbench.profiles.probe]
base = "quick"
rounds = 2
warmup_rounds = 1
[tool.imgbench.profiles.probe.read]
libraries = ["probe", "crash", "pillow"]
codecs = ["jpeg", "png"]

[tool.imgbench.profiles.hang]
base = "probe"
[tool.imgbench.profiles.hang.read]
libraries = ["hang"]
codecs = ["jpeg"]
"""


@pytest.fixture
def probe_env(tmp_path: Path) -> dict[str, str]:
    site = installed_package(
        tmp_path,
        "probe_imgbench",
        PROBE,
        "[imgbench.read]\nprobe = probe_imgbench:PROBE\ncrash = probe_imgbench:CRASH\n"
        "hang = probe_imgbench:HANG\n",
    )
    (tmp_path / "pyproject.toml").write_text(PROFILE)
    # as importing cv2 does (LD_LIBRARY_PATH): the runner's environment changes after it started
    (site / "late_env_plugin.py").write_text(
        "import os\n\ndef pytest_sessionstart(session):\n    os.environ['PROBE_LATE'] = 'x' * 77\n"
    )
    return {
        **os.environ,
        "PYTHONPATH": str(site),
        "IMGBENCH_PYPROJECT": str(tmp_path / "pyproject.toml"),
        "PROBE_LOG": str(tmp_path / "probe.log"),
    }


def _run(tmp_path: Path, dataset: Path, env: dict[str, str], *args: str) -> pd.DataFrame:
    import subprocess
    import sys

    results = tmp_path / "results"
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            str(ROOT / "benches" / "bench_readers.py"),
            "--imgbench-profile=probe",
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
    rows = _run(
        tmp_path,
        tiny_dataset,
        probe_env,
        "--imgbench-allocator=glibc-tuned",
        "--imgbench-host-gate=1.3",  # every kept round says what the host was doing
        "-p",
        "late_env_plugin",
    )
    probe = rows[rows["library"] == "probe"]
    assert list(probe["status"]) == ["ok", "ok"]  # jpeg and png
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
    if layout_can_be_fixed():  # the default: randomisation off in the measuring process
        assert set(probe["address_layout"]) == {"fixed"}
        assert all(s["personality"] & ADDR_NO_RANDOMIZE for s in seen)
    else:
        assert set(probe["address_layout"]) == {"randomized"}
    assert (probe["page_faults_minor_per_image"] >= 0).all()
    for _, row in probe.iterrows():  # every kept round says what the host was doing
        assert len(row["host_ratios"]) == len(row["samples_s"]) == row["rounds"]
        assert row["host_probe_reference_s"] > 0 and row["host_max_ratio"] == 1.3


def test_a_crashing_case_is_a_failed_row_and_the_next_case_runs(
    tmp_path: Path, tiny_dataset: Path, probe_env: dict[str, str]
) -> None:
    rows = _run(tmp_path, tiny_dataset, probe_env, "-k", "crash or pillow")
    crash = rows[rows["library"] == "crash"]
    assert set(crash["status"]) == {"failed"}
    assert crash["reason"].str.contains("killed by signal SIGSEGV").all()
    pillow = rows[rows["library"] == "pillow"]
    assert set(pillow["status"]) == {"ok"} and set(pillow["process_model"]) == {"worker"}


def test_in_process_is_a_choice_and_says_so(
    tmp_path: Path, tiny_dataset: Path, probe_env: dict[str, str]
) -> None:
    rows = _run(tmp_path, tiny_dataset, probe_env, "--imgbench-process=in-process", "-k", "probe")
    assert set(rows["process_model"]) == {"in-process"} and set(rows["status"]) == {"ok"}
    seen = (tmp_path / "probe.log").read_text().splitlines()
    assert len(seen) == 1  # one process: the second case found the library already used


def test_a_randomized_layout_is_a_choice_and_says_so(
    tmp_path: Path, tiny_dataset: Path, probe_env: dict[str, str]
) -> None:
    rows = _run(
        tmp_path, tiny_dataset, probe_env, "--imgbench-address-layout=randomized", "-k", "probe"
    )
    assert set(rows["status"]) == {"ok"} and set(rows["address_layout"]) == {"randomized"}
    seen = [json.loads(line) for line in (tmp_path / "probe.log").read_text().splitlines()]
    assert seen and not any(s["personality"] & ADDR_NO_RANDOMIZE for s in seen)


@pytest.mark.parametrize("name", ["jemalloc", "tcmalloc"])
def test_preloaded_allocators_are_used_or_skipped_with_the_package_to_install(
    tmp_path: Path, tiny_dataset: Path, probe_env: dict[str, str], name: str
) -> None:
    rows = _run(tmp_path, tiny_dataset, probe_env, f"--imgbench-allocator={name}", "-k", "probe")
    try:
        chosen = allocator(name)
    except AllocatorUnavailableError as exc:
        assert set(rows["status"]) == {"skipped"}
        assert rows["reason"].str.contains("apt-get install").all(), str(exc)
        return
    assert set(rows["status"]) == {"ok"} and set(rows["allocator"]) == {name}
    seen = [json.loads(line) for line in (tmp_path / "probe.log").read_text().splitlines()]
    assert all(s["ld_preload"] == chosen.environment["LD_PRELOAD"] for s in seen)


def test_calibration_and_run_rows_agree_between_models(tmp_path: Path, tiny_dataset: Path) -> None:
    """The same quick reader case, in a worker and in-process: same work per round."""
    frames = []
    for model in ("worker", "in-process"):
        result = run_pytest(
            [
                str(ROOT / "benches" / "bench_readers.py"),
                "--imgbench-profile=quick",
                f"--dataset={tiny_dataset}",
                f"--imgbench-results={tmp_path / model}",
                f"--imgbench-process={model}",
                "--imgbench-host-gate=1.3",  # the gate's own check: on in both models
                "-k",
                "pillow and jpeg",
            ],
            cwd=ROOT,
        )
        assert result.returncode == 0, result.stdout[-2000:]
        (path,) = (tmp_path / model).glob("*.parquet")
        frames.append(pd.read_parquet(path).iloc[0])
    worker, here = frames
    assert worker["process_model"] == "worker" and here["process_model"] == "in-process"
    assert worker["case_id"] == here["case_id"]
    assert worker["images_per_round"] % 8 == 0 and here["images_per_round"] % 8 == 0
    assert json.loads(worker["extra_json"])["verified_images"] == 8
    for row in frames:  # both models time rounds the same way: gated, with the host recorded
        assert row["host_max_ratio"] == 1.3 and len(row["host_ratios"]) == row["rounds"]


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
    import sys

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
