"""A case forks from the same server state whatever ran before it, and can sample several layouts.

- the server imports what the profile needs, not what the session selected;
- the server never unpickles a job (its objects would stay in the heap every later case inherits);
- a case that built the session's shared inputs is measured again in a fresh fork;
- ``processes`` measures a case in several forks, each with its own heap offset, rounds pooled.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from imgbench.controls import WORKER_IMPORTS_ENV
from imgbench.measure.rounds import Measurement, pool
from imgbench.measure.server import (
    JobInbox,
    WorkerJob,
    WorkerServer,
    _write_message,
)
from imgbench.measure.settings import Settings
from imgbench.measure.threads import current_settings
from imgbench.profiles import ProfileChoice
from imgbench.stages import planner
from tests.conftest import run_pytest
from tests.measure.conftest import Measure, seen_by_probe
from tests.measure.test_worker import _run

ROOT = Path(__file__).resolve().parents[2]


def test_the_server_imports_the_profiles_modules_whatever_was_selected(
    tmp_path: Path,
    tiny_dataset: Path,
    probe_env: dict[str, str],
) -> None:
    """The profile's formats stage needs lmdb; a session of the probe reader alone has its
    server import it too (the default). Told to import only what it selected, it does not:
    test_worker.py's fresh-process session checks that (``--imgbench-worker-imports=selected``).
    The profile (probe-imports, tests/measure/conftest.py) keeps its other stages light: the
    probe profile's whole import set was torch, torchvision and albumentations too."""
    env = {**probe_env, "PROBE_MODULES": "lmdb"}
    env.pop(WORKER_IMPORTS_ENV, None)  # the tests' sessions default to selected (tests/conftest.py)
    rows = _run(
        tmp_path / "profile", tiny_dataset, env, "-k", "probe and jpeg", profile="probe-imports"
    )
    assert list(rows["status"]) == ["ok"] and set(rows["worker_imports"]) == {"profile"}
    assert all(s["modules"] == ["lmdb"] for s in seen_by_probe(tmp_path))


def test_a_case_that_built_shared_inputs_is_measured_again_in_a_fresh_fork(
    tmp_path: Path, measure: Measure
) -> None:
    ((_, outcome),) = measure(("probe",), ("jpeg",))
    assert isinstance(outcome, Measurement), outcome
    assert outcome.process_images_per_s == []  # one process: no per-process figures to keep
    # the reader's reference decodes went to the scratch folder in the first fork
    assert outcome.extra["measured_again_after_building"] > 0
    pids = [s["pid"] for s in seen_by_probe(tmp_path)]
    assert len(pids) == 2 and len(set(pids)) == 2  # two forks, each decoding for the first time


def test_several_processes_pool_their_rounds_and_keep_each_figure(
    tmp_path: Path, measure: Measure
) -> None:
    ((_, outcome),) = measure(("probe",), ("jpeg",), processes=3)
    assert isinstance(outcome, Measurement), outcome
    assert len(outcome.process_images_per_s) == 3 and min(outcome.process_images_per_s) > 0
    # each process times max(2, ceil(2 rounds / 3)) = 2 rounds; the pooled row keeps all 6
    assert outcome.rounds == 6 == len(outcome.samples_s) == len(outcome.host_ratios)
    # the first process built the references and ran again, then two more: four forks
    assert len({s["pid"] for s in seen_by_probe(tmp_path)}) == 4
    # one process keeps no per-process figures: the fresh-fork test above checks that


def _measurement(images: int, samples: list[float], faults: float) -> Measurement:
    return Measurement(
        samples_s=samples,
        latencies_s=np.full(images, 0.001),
        images_per_round=images,
        bytes_per_round=images * 1000,
        megapixels_per_round=images * 0.1,
        rounds=len(samples),
        warmup_rounds=1,
        threads=current_settings(),
        peak_rss_bytes=100 * images,
        cache_method=None,
        page_faults_minor_per_image=faults,
        host_ratios=[1.0] * len(samples),
    )


def test_pool_scales_rounds_of_a_process_that_kept_fewer_inputs() -> None:
    first = _measurement(8, [0.8, 0.8], faults=1.0)
    cut = _measurement(4, [0.2, 0.2], faults=3.0)  # its budget kept 4 inputs, twice as fast
    pooled = pool([first, cut])
    assert pooled.images_per_round == 8 and pooled.rounds == 4
    assert pooled.samples_s == pytest.approx([0.8, 0.8, 0.4, 0.4])
    assert pooled.process_images_per_s == pytest.approx([10.0, 20.0])
    assert pooled.page_faults_minor_per_image == pytest.approx(2.0)
    assert pooled.peak_rss_bytes == 800 and len(pooled.host_ratios) == 4
    assert pool([first]) is first


class _RecordsWhereItIsUnpickled:
    """Unpickled, it appends the pid of the unpickling process to a file."""

    def __init__(self, log: str) -> None:
        self.log = log

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (_record_pid, (self.log,))


def _record_pid(log: str) -> str:
    with open(log, "a") as handle:
        handle.write(f"{os.getpid()}\n")
    return log


def test_the_server_hands_jobs_on_without_unpickling_them(
    tmp_path: Path, tiny_dataset: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONPATH", str(ROOT))  # the children unpickle this module's marker
    log = tmp_path / "unpickled.log"
    server = WorkerServer(allocator=_glibc())
    try:
        for n in range(2):
            job = WorkerJob(
                settings=Settings(max_images=4, rounds=1, warmup_rounds=0, min_round_s=0.0),
                planner=planner(ProfileChoice("quick")),
                dataset=str(tiny_dataset),
                stage="read",
                case_id="read/no-such-case",
                scratch=str(tmp_path),
                result_path=str(tmp_path / f"result-{n}.pickle"),
                services={"marker": _RecordsWhereItIsUnpickled(str(log))},
            )
            outcome = server.run(job, timeout_s=120)
            assert outcome.status == "failed" and "does not plan" in (outcome.reason or "")
        assert server._process is not None
        server_pid = server._process.pid
    finally:
        server.stop()
    pids = [int(line) for line in log.read_text().split()]
    assert len(pids) == 2 and server_pid not in pids and os.getpid() not in pids


def _glibc():  # type: ignore[no-untyped-def]
    from imgbench.measure.allocator import allocator

    return allocator("glibc")


def test_the_inbox_reads_whole_jobs_and_refuses_one_too_large(tmp_path: Path) -> None:
    path = tmp_path / "jobs"
    with path.open("wb") as out:
        _write_message(out, {"a": 1})
        _write_message(out, "x" * 100_000)
    with path.open("rb") as stream:
        inbox = JobInbox(stream)
        assert inbox.next() and inbox.job() == {"a": 1}
        assert inbox.next() and inbox.job() == "x" * 100_000
        assert not inbox.next()
    with path.open("wb") as out:
        out.write((JobInbox.MAX_JOB_BYTES + 1).to_bytes(4, "big"))
    with path.open("rb") as stream, pytest.raises(ValueError, match="the inbox holds"):
        JobInbox(stream).next()


def test_an_unknown_worker_imports_setting_is_a_usage_error(tiny_dataset: Path) -> None:
    out = run_pytest(
        [
            str(ROOT / "benches" / "bench_readers.py"),
            "--imgbench-profile=quick",
            f"--dataset={tiny_dataset}",
            "--collect-only",
        ],
        cwd=ROOT,
        env={**os.environ, WORKER_IMPORTS_ENV: "everything"},
    )
    assert out.returncode == 4, out.stdout[-2000:]
    assert "IMGBENCH_WORKER_IMPORTS='everything'" in out.stdout + out.stderr
