"""`pytest benches/` on real photos, the quick profile: loader rows the dashboard reads."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd
import pytest

from tests.shared_runs import SessionRun

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
def loader_results(quick_session: SessionRun) -> Path:
    """The results folder of the test session's one quick run on real photos (every stage;
    tests/shared_runs.py)."""
    assert quick_session.returncode == 0, quick_session.output
    return quick_session.results


@pytest.fixture(scope="module")
def loader_rows(quick_session: SessionRun, loader_results: Path) -> pd.DataFrame:
    return quick_session.frame("loader")


def test_quick_profile_rows(loader_rows: pd.DataFrame) -> None:
    assert (loader_rows.status == "ok").all(), loader_rows.reason.tolist()
    assert set(zip(loader_rows.library, loader_rows.workers, strict=True)) == {
        ("torch-dataloader", 0),
        ("torch-dataloader", 2),
        ("torch-dataloader", os.cpu_count() or 2),  # the common default at one worker per core
        ("threadpool", 2),
    }
    assert (loader_rows.stage == "loader").all()
    # measured in a fork of the worker server, under the session's allocator, like every stage
    assert (loader_rows.process_model == "worker").all()
    assert (loader_rows.allocator == "glibc").all()
    assert (loader_rows.batch_size == 8).all()
    # two batches per worker at least, so a round spans the workers' bursts; a round shorter than
    # the profile's 20 ms repeats that pass (calibration: sixteen 320x240 photos through OpenCV and
    # albumentations at 0 workers take under 20 ms on a quiet host)
    expected = 8 * loader_rows.workers.clip(lower=1) * 2 * loader_rows.round_repeats
    assert (loader_rows.round_repeats >= 1).all()
    assert (loader_rows.images_per_round == expected).all()
    assert (loader_rows.images_per_s_median > 0).all()
    params = loader_rows.params_json.map(json.loads)
    assert {p["format"] for p in params} == {"files"}
    assert {p["pipeline"] for p in params} == {
        "albumentations/numpy:train-classification",
        "torchvision/v2-pil:train-classification",  # the common default
    }
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
        # the default pipeline: OpenCV decodes, albumentations augments, torch collates; the
        # common default: Pillow decodes, torchvision augments
        common = "torchvision" in json.loads(row.params_json)["pipeline"]
        dists = (
            ("pillow", "torchvision") if common else ("opencv-python-headless", "albumentations")
        )
        for dist in (*dists, "torch"):
            assert versions[dist] == dist_version(dist), (row.test_id, dist)


def test_the_answer_on_real_rows(loader_results: Path) -> None:
    """The answer's tied set holds the fastest ok row as it was measured (the pick is within
    it), and its speed-up over the common default measured in the same session."""
    from imgbench.answer import answers
    from imgbench.results.store import load_results

    frame = load_results(loader_results).frame
    (answer,) = answers(frame)
    assert answer.best is not None and answer.default_0 is not None
    loaders = frame[frame["stage"] == "loader"]  # the other stages' rows are the session's too
    fastest = loaders.loc[loaders["images_per_s_median"].idxmax()]
    assert fastest["status"] == "ok" and answer.fastest is not None
    assert answer.fastest.case_id == fastest["case_id"]
    assert answer.best in answer.equivalent and answer.pick_rule
    assert answer.output == "3x224x224"
    assert answer.default_0.configuration.decoder == "pillow/open-convert"
    assert answer.bound is not None and answer.bound.stage in {
        "read",
        "decode",
        "augment",
        "collate",
        "hand-over",
    }
