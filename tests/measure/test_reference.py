"""The machine reference: its bundled images, its figures, how a run hands it to its rows.

Every measurement here is tiny (windows of 0.03 s): these tests check that the workload runs and
that every process it starts is gone, not how fast this machine is.
"""

from __future__ import annotations

import fnmatch
import multiprocessing
import os
import re
import tomllib
from pathlib import Path

import pandas as pd
import pytest
from PIL import Image

from imgbench.measure import quota, reference
from imgbench.measure.case import Case
from imgbench.measure.reference import (
    OFF_REASON,
    REFERENCE_ENV,
    MachineReference,
    all_cores_rate,
    measure_reference,
    session_reference,
    workload_version,
)
from imgbench.measure.rows import RunHeader, case_listing, case_row
from imgbench.results.schema import COLUMNS, comparison_key
from imgbench.results.store import rows_table
from tests.conftest import run_pytest
from tests.measure.test_plugin_session import BENCH

ROOT = Path(__file__).resolve().parents[2]
TINY = 0.03  # seconds per figure: enough to run the workload, far too short to mean anything
MEASURED = MachineReference(
    workload="decode+augment-v1:0123456789ab",
    one_images_per_s=100.0,
    all_images_per_s=190.0,
    cores=2,
)


def test_the_bundled_images_are_small_jpegs_shipped_as_package_data() -> None:
    files = reference.image_files()
    assert len(files) == 4
    assert sum(f.stat().st_size for f in files) < 300_000
    for path in files:
        with Image.open(path) as image:
            assert image.format == "JPEG" and 320 <= max(image.size) <= 640
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    package = ROOT / "src" / "imgbench" / "measure"
    patterns = setuptools["package-data"]["imgbench.measure"]
    for path in files:
        relative = str(path.relative_to(package))
        assert any(fnmatch.fnmatch(relative, p) for p in patterns), relative


def test_the_version_names_the_workload_and_hashes_the_images(tmp_path: Path, monkeypatch) -> None:
    version = workload_version()
    assert re.fullmatch(r"decode\+augment-v1:[0-9a-f]{12}", version)
    assert workload_version() == version  # stable
    for path in reference.image_files():
        (tmp_path / path.name).write_bytes(path.read_bytes())
    monkeypatch.setattr(reference, "IMAGES", tmp_path)
    assert workload_version() == version  # the bytes decide, not where they are
    first = sorted(tmp_path.glob("*.jpg"))[0]
    first.write_bytes(first.read_bytes() + b"\0")
    assert workload_version() != version


def test_one_image_becomes_a_normalised_224_square() -> None:
    out = reference.process_one(reference.image_files()[0].read_bytes())
    assert out.shape == (224, 224, 3) and str(out.dtype) == "float32"
    assert -3 < float(out.mean()) < 3


def test_both_figures_are_measured_and_every_process_is_gone() -> None:
    found = measure_reference(TINY, processes=2)
    assert found.error is None and found.workload == workload_version()
    assert found.one_images_per_s > 0 and found.all_images_per_s > 0 and found.cores == 2
    assert multiprocessing.active_children() == []
    columns = found.columns()
    assert set(columns) <= set(COLUMNS)
    assert columns["reference_1_images_per_s"] == found.one_images_per_s


def test_a_failing_process_fails_the_figure_and_is_joined(monkeypatch) -> None:
    def broken(data: bytes) -> None:
        raise ValueError("no decoder")

    monkeypatch.setattr(reference, "process_one", broken)  # the forks inherit it
    with pytest.raises(RuntimeError, match="no decoder"):
        all_cores_rate([b"x"], 2, TINY)
    assert multiprocessing.active_children() == []
    failed = reference.safe_reference(TINY)  # never raises: the reason is the reference
    assert failed.error is not None and "no decoder" in failed.error
    assert failed.columns()["reference_1_images_per_s"] is None


def test_one_failing_process_does_not_leave_the_others_waiting(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The second fork fails in its warm-up while the first waits for it at the start line:
    the first is released at once, not after its 30 s timeout."""
    import time

    real = reference._run_for

    def second_fails(images: list[bytes], seconds: float, start: int = 0) -> tuple[int, float]:
        if start == 1:
            raise OSError("out of memory")
        return real(images, seconds, start)

    monkeypatch.setattr(reference, "_run_for", second_fails)
    began = time.monotonic()
    with pytest.raises(RuntimeError, match="out of memory"):
        all_cores_rate([path.read_bytes() for path in reference.image_files()], 2, TINY)
    assert time.monotonic() - began < 3 and multiprocessing.active_children() == []


def test_the_environment_carries_it_from_the_runner() -> None:
    assert MachineReference.from_env(MEASURED.to_env()) == MEASURED
    assert MachineReference.from_env("off").error == OFF_REASON
    assert "unreadable" in (MachineReference.from_env("[1, 2]").error or "")
    assert "unreadable" in (MachineReference.from_env('{"speed": 3}').error or "")


def test_a_session_reads_the_runs_figures_or_measures_its_own(monkeypatch) -> None:
    measured: list[float] = []

    def tiny(seconds: float = reference.SECONDS) -> MachineReference:
        measured.append(seconds)
        return MEASURED

    monkeypatch.setattr(reference, "safe_reference", tiny)
    monkeypatch.setenv(REFERENCE_ENV, MEASURED.to_env())
    assert session_reference("wall") == MEASURED and measured == []  # the run's, not measured
    monkeypatch.delenv(REFERENCE_ENV)
    assert session_reference("wall") == MEASURED and len(measured) == 1  # `pytest benches/`
    counted = session_reference("instructions")
    assert "instruction-count" in (counted.error or "") and len(measured) == 1


def test_a_failure_is_said_once_as_a_warning(monkeypatch) -> None:
    monkeypatch.delenv(REFERENCE_ENV, raising=False)
    monkeypatch.setattr(
        reference, "safe_reference", lambda: MachineReference(error="not measured: no fork")
    )
    with pytest.warns(UserWarning, match="no fork"):
        found = session_reference("wall")
    assert found.columns()["reference_error"] == "not measured: no fork"


def test_rows_carry_the_runs_reference_and_their_comparison_key() -> None:
    case = Case(stage="test", library="alpha", variant="ok", prepare=lambda ctx, case: None)
    run = RunHeader("run", None, "run", reference=MEASURED)
    row = case_row(run, case_listing("t", case), case, None, "skipped", "why", 0.0, "tiny")
    assert row["reference_1_images_per_s"] == 100.0 and row["reference_all_images_per_s"] == 190.0
    assert row["reference_cores"] == 2 and row["reference_workload"] == MEASURED.workload
    assert row["comparison_key"] == comparison_key(row) and len(row["comparison_key"]) == 16
    rows_table([row])  # every value fits its column's type
    plain = case_row(
        RunHeader("run", None, "run"),
        case_listing("t", case),
        case,
        None,
        "skipped",
        "why",
        0.0,
        "tiny",
    )
    assert plain["reference_1_images_per_s"] is None  # no reference: null columns


def test_the_key_changes_with_each_of_its_columns() -> None:
    row = {"stage": "read", "case_id": "c", "library_version": "1.0", "dataset_fingerprint": "f"}
    keys = {comparison_key(row)}
    for column, other in (
        ("stage", "loader"),
        ("case_id", "d"),
        ("library_version", "1.1"),
        ("dataset_fingerprint", "g"),
    ):
        keys.add(comparison_key({**row, column: other}))
    assert len(keys) == 5
    assert comparison_key({**row, "library_version": float("nan")}) == comparison_key(
        {**row, "library_version": None}
    )


def test_a_session_started_by_imgbench_run_writes_its_figures(
    tmp_path: Path, tiny_dataset: Path
) -> None:
    """The fake bench's session (cases timing ``len``), handed a run's reference: every row,
    ok, failed or skipped, carries it."""
    import os

    (tmp_path / "test_fake_bench.py").write_text(BENCH)
    results = tmp_path / "results"
    args = [
        "test_fake_bench.py",
        f"--dataset={tiny_dataset}",
        f"--imgbench-results={results}",
        "--imgbench-profile=quick",
        "-k",
        "alpha or beta",
    ]
    env = {**os.environ, REFERENCE_ENV: MEASURED.to_env()}
    proc = run_pytest(args, cwd=tmp_path, env=env)
    files = list(results.glob("*.parquet"))
    assert len(files) == 1, proc.stdout + proc.stderr
    frame = pd.read_parquet(files[0]).set_index("library")
    assert set(frame["status"]) == {"ok", "failed"}
    assert (frame["reference_1_images_per_s"] == 100.0).all()
    assert (frame["reference_workload"] == MEASURED.workload).all()
    assert frame["reference_error"].isna().all()
    keys = [comparison_key(row) for row in frame.reset_index().to_dict("records")]
    assert list(frame["comparison_key"]) == keys


def test_imgbench_run_measures_it_once_and_hands_it_on(monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    """The runner's step before its sessions: measured, said in one line, put in the variable
    its sessions and the final read; a value already there is kept; a failure is said once."""
    from imgbench import cli

    calls: list[int] = []

    def measured() -> MachineReference:
        calls.append(1)
        return MEASURED

    monkeypatch.delenv(REFERENCE_ENV, raising=False)
    monkeypatch.setattr(reference, "safe_reference", measured)
    cli._machine_reference("wall")
    assert MachineReference.from_env(os.environ[REFERENCE_ENV]) == MEASURED and calls == [1]
    assert "100 images/s on one thread, 190 in 2 processes" in capsys.readouterr().out
    cli._machine_reference("wall")  # the variable is there: kept
    assert calls == [1]
    monkeypatch.delenv(REFERENCE_ENV)
    cli._machine_reference("instructions")  # counting instructions: no reference
    assert REFERENCE_ENV not in os.environ and calls == [1]
    monkeypatch.setattr(reference, "safe_reference", lambda: MachineReference(error="no fork"))
    cli._machine_reference("wall")
    assert "machine reference: none (no fork); the run goes on" in capsys.readouterr().err
    assert MachineReference.from_env(os.environ[REFERENCE_ENV]).error == "no fork"


def test_the_median_of_several_timings_leaves_failures_out() -> None:
    from imgbench.measure.reference import median_reference

    found = [
        MachineReference("w", 300.0, 600.0, 2),
        MachineReference(error="not measured: boom"),
        MachineReference("w", 500.0, 900.0, 2),
        MachineReference("w", 400.0, 700.0, 2),
    ]
    merged = median_reference(found)
    assert merged is not None and (merged.one_images_per_s, merged.all_images_per_s) == (400, 700)
    assert median_reference([MachineReference(error="x")]) is None


def test_under_a_quota_each_turn_spans_ten_of_its_periods(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    turns: list[tuple[str, float]] = []
    monkeypatch.setattr(
        reference, "one_thread_rate", lambda images, s: turns.append(("one", s)) or 100.0
    )
    monkeypatch.setattr(
        reference, "all_cores_rate", lambda images, n, s: turns.append(("all", s)) or 150.0
    )
    monkeypatch.setattr(quota, "cpu_quota", lambda: quota.CpuQuota(1.0, 0.1, tmp_path))
    found = reference.measure_reference(seconds=1.5, processes=2)
    assert found.cpu_quota == 1.0 and len(turns) == 2 * reference.ROUNDS
    assert {s for _, s in turns} == {quota.ROUND_PERIODS * 0.1}  # not 1.5 / 3
    turns.clear()
    monkeypatch.setattr(quota, "cpu_quota", lambda: None)
    assert reference.measure_reference(seconds=1.5, processes=2).cpu_quota is None
    assert {s for _, s in turns} == {0.5}
