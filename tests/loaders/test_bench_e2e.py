"""`pytest benches/bench_loaders.py` on real photos, the quick profile: rows the dashboard reads."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import run_pytest

BENCHES = Path(__file__).resolve().parents[2] / "benches"
DASHBOARD_KEYS = (
    "time_to_first_batch_s",
    "batch_latency_ms",
    "cpu_percent",
    "stage_times_s",
    "memory_timeline",
    "peak_pss_bytes",
    "pss_growth_bytes_per_min",
)


@pytest.fixture(scope="module")
def loader_rows(tmp_path_factory: pytest.TempPathFactory, photo_dir: Path) -> pd.DataFrame:
    out = tmp_path_factory.mktemp("loader-bench")
    proc = run_pytest(
        [
            str(BENCHES / "bench_loaders.py"),
            f"--dataset={photo_dir}",
            "--imgbench-profile=quick",
            "--imgbench-rounds=3",
            f"--imgbench-results={out / 'results'}",
        ],
        cwd=out,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (parquet,) = (out / "results").glob("*.parquet")
    return pd.read_parquet(parquet)


def test_quick_profile_rows(loader_rows: pd.DataFrame) -> None:
    assert (loader_rows.status == "ok").all(), loader_rows.reason.tolist()
    assert set(zip(loader_rows.library, loader_rows.workers, strict=True)) == {
        ("torch-dataloader", 0),
        ("torch-dataloader", 2),
        ("threadpool", 2),
    }
    assert (loader_rows.stage == "loader").all()
    # measured in a fork of the worker server, under the session's allocator, like every stage
    assert (loader_rows.process_model == "worker").all()
    assert (loader_rows.allocator == "glibc").all()
    assert (loader_rows.batch_size == 8).all()
    # two batches per worker at least, so a round spans the workers' bursts
    expected = 8 * loader_rows.workers.clip(lower=1) * 2
    assert (loader_rows.images_per_round == expected).all()
    assert (loader_rows.images_per_s_median > 0).all()
    params = loader_rows.params_json.map(json.loads)
    assert {p["format"] for p in params} == {"files"}
    assert {p["pipeline"] for p in params} == {"albumentations/numpy:train-classification"}
    forked = [
        p.get("start_method")
        for p, lib in zip(params, loader_rows.library, strict=True)
        if lib == "torch-dataloader"
    ]
    assert set(forked) == {None, "fork"}  # 0 workers has no start method


def test_extra_has_what_the_dashboard_reads(loader_rows: pd.DataFrame) -> None:
    for _, row in loader_rows.iterrows():
        extra = json.loads(row.extra_json)
        missing = [k for k in DASHBOARD_KEYS if k not in extra]
        assert not missing, (row.test_id, missing)
        assert set(extra["stage_times_s"]) == {"read", "decode", "augment", "collate"}
        assert all(v > 0 for v in extra["stage_times_s"].values())
        assert set(extra["batch_latency_ms"]) == {"p50", "p95", "p99"}
        processes = {p["process"] for p in extra["memory_timeline"]}
        expected = (
            {"main", "worker-0", "worker-1"}
            if row.library == "torch-dataloader" and row.workers == 2
            else {"main"}
        )
        assert processes == expected, row.test_id
        assert all(
            p["uss_bytes"] > 0 and p["pss_bytes"] >= p["uss_bytes"]
            for p in extra["memory_timeline"]
        )
        assert extra["workers_alive_after_close"] == []
        assert extra["time_to_first_batch_s"] > 0


def test_rows_record_the_first_batch_check_and_pipeline_versions(loader_rows: pd.DataFrame) -> None:
    from imgbench.machine import dist_version

    for _, row in loader_rows.iterrows():
        extra = json.loads(row.extra_json)
        assert extra["first_batch_check"] == "pass", row.test_id
        assert extra["first_batch"]["shape"] == [8, 3, 224, 224]
        versions = extra["pipeline_versions"]
        assert versions["numpy"] == dist_version("numpy")
        # the default pipeline: OpenCV decodes, albumentations augments, torch collates
        for dist in ("opencv-python-headless", "albumentations", "torch"):
            assert versions[dist] == dist_version(dist), (row.test_id, dist)
