"""imgbench.answer on realistic rows: the configuration it recommends is a real, comparable one;
experiments and ceilings are references; machines and datasets are never pooled."""

from __future__ import annotations

import json
import tempfile
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from imgbench.answer import answers, problems
from imgbench.answer.bound import bounding_stage
from imgbench.answer.rows import Configuration
from imgbench.results.store import load_results, write_rows
from tests.dashboard.fixtures import (
    COMMON_DEFAULT_IPS,
    COW_EXPERIMENT_IPS,
    run_rows,
    standard_runs,
)

BASE = standard_runs()[0]


def frame_of(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """The rows as the dashboard and the report read them: written and loaded by the store (its
    columns are Arrow-backed, which a plain DataFrame would not catch)."""
    with tempfile.TemporaryDirectory() as folder:
        write_rows(rows, Path(folder) / "run.parquet")
        return load_results(folder).frame


def real_loaders(frame: pd.DataFrame) -> pd.DataFrame:
    rows = frame[(frame["stage"] == "loader") & (frame["library"] != "cow-experiment")]
    return rows[~rows["params_json"].str.contains("accelerator_images_per_s")]


def test_recommends_the_fastest_real_configuration_not_the_experiment() -> None:
    frame = frame_of(run_rows(BASE))
    (answer,) = answers(frame)
    loaders = real_loaders(frame)
    best = loaders.loc[loaders["images_per_s_median"].idxmax()]
    assert answer.best is not None
    assert answer.best.case_id == best["case_id"]
    assert answer.best.images_per_s < COW_EXPERIMENT_IPS / 100  # the trap was there
    assert answer.output == "3x224x224" and answer.codec == "jpeg"
    config = answer.best.configuration
    assert (config.format, config.decoder) == ("files", "opencv/imdecode-rgb")
    assert config.augment == "albumentations/numpy" and config.workers == 2
    experiments = {r.name for r in answer.references if r.kind == "experiment"}
    assert any(name.startswith("cow-experiment") for name in experiments)
    assert any("au-sleep" in name for name in experiments)


def test_speedup_over_the_common_default_at_0_and_at_cores_workers() -> None:
    (answer,) = answers(frame_of(run_rows(BASE)))
    assert answer.default_0 is not None and answer.default_cores is not None
    assert answer.default_0.configuration.is_common_default
    assert answer.default_cores.configuration.workers == answer.cores == 2
    assert answer.best is not None
    assert answer.speedup(answer.default_0) == pytest.approx(
        answer.best.images_per_s / answer.default_0.images_per_s
    )
    assert answer.default_0.images_per_s == pytest.approx(COMMON_DEFAULT_IPS[0], rel=0.1)
    assert "the common default at 0 workers" in answer.headline()
    assert not answer.missing


def test_a_missing_default_is_named_not_invented() -> None:
    rows = [r for r in run_rows(BASE) if r["variant"] != "files-pillow-torchvision"]
    (answer,) = answers(frame_of(rows))
    assert answer.best is not None and answer.default_0 is None
    assert any("common default" in note and "0 workers" in note for note in answer.missing)
    assert "x the common default" not in answer.headline()


def test_ceilings_are_full_scale_references_only() -> None:
    rows = run_rows(BASE)
    native = next(r for r in rows if r["stage"] == "native")
    reduced = {
        **native,
        "variant": "decompress-rgb-scaled",
        "case_id": native["case_id"] + "-scaled",
        "params_json": json.dumps({"codec": "jpeg", "reduce": 4}),
        "images_per_s_median": 50_000.0,
    }
    (answer,) = answers(frame_of([*rows, reduced]))
    ceilings = [r for r in answer.references if r.kind == "ceiling"]
    assert {r.case_id for r in ceilings} == {
        native["case_id"],
        "format/raw-file/one-file[cache_state=warm,order=sequential]",
    }
    assert answer.best is not None and answer.best.configuration.loader != "tjbench"


def test_decode_only_rows_are_not_compared_with_training_pipelines() -> None:
    """A pass-through loader delivers full-size decodes: other work, so not the answer."""
    rows = run_rows(BASE)
    loader = next(r for r in rows if r["stage"] == "loader" and r["library"] == "threads")
    decode_only = {
        **loader,
        "variant": "files-opencv-none",
        "case_id": loader["case_id"] + "-none",
        "params_json": json.dumps({"workers": 2, "pipeline": "none", "format": "files"}),
        "megapixels_per_round": loader["images_per_round"] * 0.24,
        "images_per_s_median": 10_000.0,
    }
    found = answers(frame_of([*rows, decode_only]))
    assert len(found) == 1 and found[0].best is not None
    assert found[0].best.case_id != decode_only["case_id"]


def test_two_machines_and_two_datasets_get_separate_answers() -> None:
    later = BASE.created + timedelta(days=1)
    other_machine = replace(BASE, machine_id="m-other", hostname="other", speed=2.0, created=later)
    other_data = replace(BASE, dataset_fingerprint="fp-real", dataset_name="real-sample")
    rows = run_rows(BASE) + run_rows(other_machine) + run_rows(other_data)
    found = answers(frame_of(rows))
    keys = {(a.machine_id, a.dataset_fingerprint) for a in found}
    assert keys == {
        ("m-ci-2core", "fp-synth-small"),
        ("m-other", "fp-synth-small"),
        ("m-ci-2core", "fp-real"),
    }
    assert found[0].machine_id == "m-other"  # the newest rows first
    for answer in found:
        assert answer.best is not None
        mine = [r for r in rows if r["case_id"] == answer.best.case_id]
        matching = [
            r
            for r in mine
            if r["machine_id"] == answer.machine_id
            and r["dataset_fingerprint"] == answer.dataset_fingerprint
        ]
        assert matching and matching[0]["images_per_s_median"] == answer.best.images_per_s


def test_no_loader_rows_says_what_to_run() -> None:
    (answer,) = answers(frame_of(run_rows(BASE, stages=("read", "native"))))
    assert answer.best is None
    assert "imgbench run -k loader" in answer.headline()
    assert answers(frame_of(run_rows(BASE, stages=("outcome",)))) == []
    assert answers(pd.DataFrame()) == []


def test_hand_over_bounds_a_loader_whose_workers_wait() -> None:
    config = Configuration("torch-dataloader", 2, "files", "pillow/open-convert", "x", "", (), None)
    times = {"read": 1e-4, "decode": 2e-3, "augment": 1e-3, "collate": 1e-4}
    waiting = bounding_stage({"stage_times_s": times, "parallel_efficiency": 0.4}, config, 2)
    assert waiting.stage == "hand-over" and "40%" in waiting.text
    busy = bounding_stage({"stage_times_s": times, "parallel_efficiency": 0.9}, config, 2)
    assert busy.stage == "decode" and "all 2 cores" in busy.text


def test_next_step_names_a_faster_decoder_measured_here() -> None:
    """Bounded by decode with Pillow: the read stage measured simplejpeg faster, so try it."""
    rows = run_rows(BASE)
    slow_decode = {"read": 1e-4, "decode": 5e-3, "augment": 1e-3, "collate": 1e-4}
    for row in rows:
        if row["stage"] == "loader" and row["library"] != "cow-experiment":
            extra = json.loads(row["extra_json"] or "{}")
            extra["stage_times_s"] = slow_decode
            row["extra_json"] = json.dumps(extra)
            params = json.loads(row["params_json"])
            if "decoder" in params:
                params["decoder"] = "pillow/open-convert"
                row["params_json"] = json.dumps(params)
    (answer,) = answers(frame_of(rows))
    assert answer.bound is not None and answer.bound.stage == "decode"
    assert answer.next_step is not None
    assert answer.next_step.startswith("try decoder simplejpeg/decode")
    assert "read/simplejpeg/decode" in answer.next_step  # the row it comes from


def test_problems_leave_out_legacy_other_environment_rows() -> None:
    rows = run_rows(BASE)
    legacy = {
        **rows[0],
        "status": "skipped",
        "reason": "runs in the pillow-simd environment: `imgbench env create pillow-simd`, then "
        "`imgbench run --env pillow-simd`",
    }
    table, left_out = problems(frame_of([*rows, legacy]))
    assert left_out == 1
    assert not table["reason"].str.contains("environment").any()
    assert set(table["status"]) == {"skipped", "failed"}
