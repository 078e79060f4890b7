"""`pytest benches/` with pytest-benchmark's own flags, into parquet and JSON, and JSON back in."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from imgbench.results.pytest_json import JSONImportError, rows_from_json
from imgbench.results.store import load_results, write_rows
from tests.conftest import run_pytest
from tests.shared_runs import ReaderRun


@pytest.fixture(scope="module")
def bench_run(reader_runs: dict[str, ReaderRun]) -> dict:
    """The first of the test session's reader pair (tests/shared_runs.py: quick, pillow and
    OpenCV on JPEG, PNG and WebP, with pytest-benchmark's save, storage and JSON flags); the
    A/A test compares it with the second."""
    run = reader_runs["a"]
    assert run.returncode == 0, run.output
    return {"dir": run.dir, "parquet": run.parquet, "stdout": run.output}


def test_rows_for_pillow_and_opencv(bench_run: dict) -> None:
    frame = pd.read_parquet(bench_run["parquet"])
    assert "-ci-" in bench_run["parquet"].name
    assert set(frame["run_name"]) == {"ci"}
    ok = frame[frame.status == "ok"]
    assert {"pillow", "opencv"} <= set(ok["library"])
    assert set(ok["codec"]) == {"jpeg", "png"}
    jpeg = ok[ok.codec == "jpeg"]
    assert (jpeg["images_per_round"] == 8 * jpeg["round_repeats"]).all()
    assert (jpeg["images_per_s_median"] > 0).all()
    assert (jpeg["megapixels_per_s_median"] > 0).all()
    assert (jpeg["library_version"].str.len() > 0).all()
    webp = frame[frame.codec == "webp"]
    assert (webp["status"] == "skipped").all()
    assert webp["reason"].str.contains("no webp images").all()
    assert frame["git_commit"].notna().all() or frame["git_commit"].isna().all()


def test_k_selection_and_pytest_benchmark_outputs(bench_run: dict) -> None:
    frame = pd.read_parquet(bench_run["parquet"])
    assert not set(frame["codec"]) & {"bmp", "tiff"}  # -k deselected them
    saved = list((bench_run["dir"] / "storage").rglob("0001_ci.json"))
    assert len(saved) == 1
    doc = json.loads((bench_run["dir"] / "run.json").read_text())
    names = {b["extra_info"]["imgbench_library"] for b in doc["benchmarks"]}
    assert {"pillow", "opencv"} <= names


def test_the_shim_hands_pytest_benchmark_exactly_the_rows_samples(bench_run: dict) -> None:
    """pytest-benchmark's table and JSON are built from the rounds imgbench timed (through one
    private call, imgbench.benchmark_shim), so they must agree with the parquet row."""
    from importlib.metadata import version

    from packaging.specifiers import SpecifierSet

    from imgbench.benchmark_shim import TESTED_VERSIONS

    assert version("pytest-benchmark") in SpecifierSet(TESTED_VERSIONS)
    frame = pd.read_parquet(bench_run["parquet"]).set_index("case_id")
    doc = json.loads((bench_run["dir"] / "run.json").read_text())
    assert doc["benchmarks"]
    for bench in doc["benchmarks"]:
        samples = list(frame.loc[bench["extra_info"]["imgbench_case_id"], "samples_s"])
        stats = bench["stats"]
        assert stats["rounds"] == len(samples)
        assert stats["min"] == pytest.approx(min(samples))
        assert stats["max"] == pytest.approx(max(samples))
        assert stats["median"] == pytest.approx(float(pd.Series(samples).median()))


def test_settings_reach_every_measured_row(bench_run: dict) -> None:
    """``--imgbench-set NAME=VALUE`` sets any control, and each row carries the settings."""
    ok = pd.read_parquet(bench_run["parquet"]).query("status == 'ok'")
    assert (ok["host_budget_s"] == 0.25).all() and (ok["max_images"] == 8).all()
    assert (ok["host_max_ratio"] == 0).all()  # the tests' sessions turn the gate off (conftest)


def test_import_real_pytest_benchmark_json(bench_run: dict, tmp_path: Path) -> None:
    rows = rows_from_json(bench_run["dir"] / "run.json")
    write_rows(rows, tmp_path / "imported.parquet")
    imported = load_results(tmp_path).frame.set_index("case_id")
    original = pd.read_parquet(bench_run["parquet"])
    original = original[original.status == "ok"].set_index("case_id")
    assert set(imported.index) == set(original.index)
    for case_id, row in original.iterrows():
        assert imported.loc[case_id, "stage"] == "read"
        assert imported.loc[case_id, "images_per_round"] == row["images_per_round"]
        assert list(imported.loc[case_id, "samples_s"]) == pytest.approx(list(row["samples_s"]))
        assert imported.loc[case_id, "images_per_s_median"] == pytest.approx(
            row["images_per_s_median"]
        )


def test_import_foreign_benchmark_json(tmp_path: Path) -> None:
    (tmp_path / "test_plain.py").write_text(
        "def test_sum(benchmark):\n    benchmark(sum, range(1000))\n"
    )
    # pytest-benchmark's default max time is 1 s of rounds: the row needs a few, not a second
    args = ["test_plain.py", "--benchmark-json=plain.json", "--benchmark-max-time=0.05"]
    proc = run_pytest(args, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout
    (row,) = rows_from_json(tmp_path / "plain.json")
    assert row["stage"] == "pytest-benchmark"
    assert row["images_per_round"] == 1 and row["images_per_s_median"] > 1000
    assert (
        len(row["samples_s"]) == row["rounds"]
    )  # pytest-benchmark 5 puts raw data in --benchmark-json


def test_import_rejects_other_json(tmp_path: Path) -> None:
    (tmp_path / "x.json").write_text('{"hello": 1}')
    with pytest.raises(JSONImportError, match="not a pytest-benchmark JSON"):
        rows_from_json(tmp_path / "x.json")
