"""A bound for the cores you don't have (imgbench.answer.scaling): the USL fit recovers a known
curve and its interval holds the truth at 16 cores; too few core counts give a labelled bound;
`imgbench advise --cores` prints the pick and the common default; lab/scaling_check.py sets a
1-core run's figure at 2 cores beside the 2-core run's."""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from imgbench.answer.scaling import (
    BOUND,
    PREDICTION,
    UslFit,
    configuration_key,
    loader_rows,
    points,
    scaling_model,
)
from imgbench.cli import app
from imgbench.results.schema import empty_row
from imgbench.results.store import load_results, write_rows

SCRIPT = Path(__file__).resolve().parents[2] / "lab" / "scaling_check.py"
TRUE = UslFit(lam=300.0, sigma=0.05, kappa=0.002)  # peaks at N* = 21.8 cores
# the answer's two subjects: the common default and a faster configuration (the pick)
COMMON_DEFAULT = (
    "files-pillow-torchvision",
    "pillow/open-convert",
    "torchvision/v2-pil:train-classification",
)
UINT8 = (
    "files-opencv-albumentations-uint8",
    "opencv/imdecode-rgb",
    "albumentations/numpy:train-uint8",
)
START = datetime(2026, 12, 1, tzinfo=UTC)


def loader_row(
    config: tuple[str, str, str],
    workers: int,
    images_per_s: float,
    *,
    cores: int,
    rng: np.random.Generator,
    machine: str = "m-test",
    noise: float = 0.02,
    rounds: int = 10,
    extra: dict[str, Any] | None = None,
    order: int = 0,
) -> dict[str, Any]:
    """An ok DataLoader row as imgbench.loaders.cases writes it: the worker-only parameters
    appear with workers, batches per round grow with them."""
    variant, decoder, pipeline = config
    params: dict[str, Any] = {
        "batch_size": 32,
        "batches_per_round": max(2, 2 * workers),
        "decoder": decoder,
        "format": "files",
        "pipeline": pipeline,
        "threads": 1,
        "workers": workers,
    }
    if workers:
        params.update(persistent_workers="true", pin_memory="false", prefetch_factor=2)
        params.update(start_method="fork")
    else:
        params["prefetch_factor"] = "default"
    images = 32 * params["batches_per_round"]
    samples = images / images_per_s * rng.lognormal(0.0, noise, rounds)
    q1, median, q3 = np.percentile(samples, [25, 50, 75])
    parameters = ",".join(f"{k}={v}" for k, v in sorted(params.items()))
    row = empty_row()
    row.update(
        run_id="r1",
        created_utc=START + timedelta(seconds=order),
        machine_id=machine,
        hostname="box",
        cpu_cores_logical=cores,
        cpu_cores_physical=cores,
        ram_bytes=64 * 2**30,
        environment="main",
        dataset_name="synthetic",
        dataset_fingerprint="fp-1",
        dataset_codec="jpeg",
        stage="loader",
        library="torch-dataloader",
        system="DataLoader",
        variant=variant,
        workers=workers,
        batch_size=32,
        threads=1,
        params_json=json.dumps(params, sort_keys=True),
        case_id=f"loader/torch-dataloader/{variant}[{parameters}]",
        status="ok",
        rounds=rounds,
        samples_s=[float(s) for s in samples],
        images_per_round=float(images),
        megapixels_per_round=images * 224 * 224 / 1e6,
        images_per_s_median=images / median,
        images_per_s_q1=images / q3,
        images_per_s_q3=images / q1,
        extra_json=json.dumps(extra or {"cpu_cores_busy": min(max(workers, 1), cores) + 0.05}),
    )
    return row


def usl_rows(
    seed: int, workers: tuple[int, ...] = (0, 1, 2, 3, 4, 6, 8), cores: int = 8
) -> list[dict[str, Any]]:
    """The uint8 configuration on an 8-core machine, following TRUE (1 worker pays the hand-off)."""
    rng = np.random.default_rng(seed)
    rows = []
    for i, w in enumerate(workers):
        n = 1 if w == 0 else min(w, cores)
        rate = float(TRUE.rate(n)) * (0.9 if w == 1 else 1.0)
        rows.append(loader_row(UINT8, w, rate, cores=cores, rng=rng, order=i))
    return rows


def frame(rows: list[dict[str, Any]], folder: Path) -> pd.DataFrame:
    """The rows as the reading side reads them: written and loaded by the results store."""
    write_rows(rows, folder / "run.parquet")
    return load_results(folder).frame


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_the_fit_recovers_a_known_usl_and_its_interval_holds_16_cores(
    seed: int, tmp_path: Path
) -> None:
    model = scaling_model(frame(usl_rows(seed), tmp_path))
    assert model is not None and model.kind == PREDICTION and model.fit is not None
    assert model.fit.lam == pytest.approx(TRUE.lam, rel=0.03)
    assert model.fit.sigma == pytest.approx(TRUE.sigma, abs=0.02)
    assert 0.0005 < model.fit.kappa < 0.004
    truth = float(TRUE.rate(16))  # 2,152 images/s: twice the largest N measured
    found = model.at(16)
    assert found.low <= truth <= found.high
    assert found.low < found.value < found.high
    assert found.high / found.low < 2.2  # an interval, not a shrug
    assert model.label.startswith("prediction (USL fit over workers 0..8: N = 1, 2, 3, 4, 6, 8")
    assert "(95% interval" in model.text_at(16)


def test_the_interval_is_the_same_for_the_same_rows(tmp_path: Path) -> None:
    rows = frame(usl_rows(0), tmp_path)
    first, second = scaling_model(rows), scaling_model(rows)
    assert first is not None and second is not None
    assert first.at(16) == second.at(16)


def test_workers_enter_at_the_cores_doing_the_work() -> None:
    rng = np.random.default_rng(0)
    rates = {0: 360.0, 1: 320.0, 2: 650.0, 3: 540.0, 4: 545.0}
    rows = pd.DataFrame(
        [loader_row(UINT8, w, r, cores=2, rng=rng, noise=0.0) for w, r in rates.items()]
    )
    found, left_out = points(rows)
    # 0 and 1 worker at N = 1, 2-4 at N = 2: the fastest row at each N is its figure
    assert [(p.cores, p.workers) for p in found] == [(1, 0), (2, 2)]
    assert [round(p.images_per_s) for p in found] == [360, 650]
    assert left_out == []
    # a run restricted to one core (taskset) records the machine's 2 cores: the caller says 1,
    # and every row is at N = 1 (its figure there: the fastest of them)
    found, _ = points(rows, cores=1)
    assert [(p.cores, p.workers) for p in found] == [(1, 2)]


def test_a_busy_main_process_row_is_no_serial_reference() -> None:
    rng = np.random.default_rng(0)
    rows = pd.DataFrame(
        [
            loader_row(UINT8, 0, 500.0, cores=4, rng=rng, extra={"cpu_cores_busy": 3.6}),
            loader_row(UINT8, 2, 600.0, cores=4, rng=rng),
        ]
    )
    found, left_out = points(rows)
    assert [p.workers for p in found] == [2]
    assert len(left_out) == 1 and "3.6 cores busy" in left_out[0]


def test_one_configuration_whatever_its_workers() -> None:
    rng = np.random.default_rng(0)
    zero, two = (loader_row(UINT8, w, 400.0, cores=2, rng=rng) for w in (0, 2))
    assert zero["case_id"] != two["case_id"]
    assert configuration_key(zero) == configuration_key(two)
    other = loader_row(COMMON_DEFAULT, 2, 400.0, cores=2, rng=rng)
    assert configuration_key(other) != configuration_key(two)
    elsewhere = {**two, "dataset_fingerprint": "fp-2"}
    assert configuration_key(elsewhere) != configuration_key(two)


def test_the_same_case_on_another_dataset_is_another_row() -> None:
    rng = np.random.default_rng(0)
    synthetic = loader_row(UINT8, 2, 600.0, cores=2, rng=rng, noise=0.0)
    real = {
        **loader_row(UINT8, 2, 500.0, cores=2, rng=rng, noise=0.0),
        "dataset_fingerprint": "fp-2",
    }
    older = {**synthetic, "images_per_s_median": 1.0, "created_utc": START - timedelta(days=1)}
    kept = loader_rows(pd.DataFrame([older, synthetic, real]))
    assert sorted(kept["images_per_s_median"].round()) == [500.0, 600.0]  # the newest of each


def test_two_core_counts_give_a_labelled_bound(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    rows = [
        loader_row(UINT8, 0, 360.0, cores=2, rng=rng),
        loader_row(UINT8, 1, 320.0, cores=2, rng=rng),
        loader_row(UINT8, 2, 646.0, cores=2, rng=rng),
    ]
    model = scaling_model(frame(rows, tmp_path))
    assert model is not None and model.kind == BOUND and model.fit is None
    assert model.label.startswith(
        "bound (linear from one core; the fit needs 3 core counts, these rows have N = 1, 2"
    )
    zero = model.points[0]
    found = model.at(16)
    assert found.value == pytest.approx(16 * zero.images_per_s)  # the best per-core rate
    assert found.high == pytest.approx(16 * zero.interval.high)
    assert found.low == pytest.approx(model.points[1].interval.low)  # measured already, at 2
    assert "not a prediction" in model.text_at(16) and "at most" in model.text_at(16)
    needed = model.cores_for(2000.0)
    assert needed.cores == math.ceil(2000.0 / zero.interval.high)
    assert needed.text.startswith(f"at least {needed.cores} cores (a bound")


def test_the_main_process_part_caps_the_bound() -> None:
    rng = np.random.default_rng(2)
    # 8 ms per batch of 32 in the main process (the copy): 0.25 ms per image, 4,000 images/s
    feed = {"cpu_cores_busy": 1.0, "feed_stage_ms_median": {"wait": 40.0, "copy": 8.0}}
    rows = pd.DataFrame(
        [loader_row(UINT8, w, 300.0 * max(w, 1), cores=2, rng=rng, extra=feed) for w in (0, 2)]
    )
    model = scaling_model(rows)
    assert model is not None and model.kind == BOUND
    assert model.serial_s_per_image == pytest.approx(0.25e-3)
    assert "capped by the main process's 0.25 ms per image" in model.label
    assert model.at(64).value == pytest.approx(4000.0)
    base = model.per_core
    assert model.at(4).value == pytest.approx(4 * base.images_per_s / base.cores)
    needed = model.cores_for(5000.0)
    assert needed.cores is None and needed.text.startswith("not reachable")


def test_the_cores_a_step_needs_from_the_fit(tmp_path: Path) -> None:
    model = scaling_model(frame(usl_rows(0), tmp_path))
    assert model is not None and model.fit is not None
    needed = model.cores_for(1500.0)
    assert needed.cores is not None
    assert model.fit.rate(needed.cores) >= 1500.0 > model.fit.rate(needed.cores - 1)
    assert "over the refits" in needed.text or "of the refits" in needed.text
    beyond = model.cores_for(10 * model.fit.ceiling)
    assert beyond.cores is None
    assert beyond.text.startswith("not reachable: the fit peaks at N* = ")


def answer_rows(cores: int, seed: int = 0, machine: str = "m-test") -> list[dict[str, Any]]:
    """The common default and the uint8 pick at 0..cores workers, scaling as TRUE's shape."""
    rng = np.random.default_rng(seed)
    rows, order = [], 0
    for config, lam in ((COMMON_DEFAULT, 170.0), (UINT8, 400.0)):
        curve = UslFit(lam, TRUE.sigma, TRUE.kappa)
        for w in sorted({0, *range(2, cores + 1, 2), cores}):
            rate = float(curve.rate(max(w, 1)))
            row = loader_row(config, w, rate, cores=cores, rng=rng, machine=machine, order=order)
            rows.append(row)
            order += 1
    return rows


def test_advise_cores_prints_the_pick_and_the_common_default(tmp_path: Path) -> None:
    write_rows(answer_rows(cores=8), tmp_path / "run.parquet")
    result = CliRunner(env={"COLUMNS": "400"}).invoke(
        app, ["advise", "--cores", "16", "--step-rate", "2000", "--results", str(tmp_path)]
    )
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    pick = next(line for line in lines if line.startswith("Pick ("))
    default = next(line for line in lines if line.startswith("Common default ("))
    assert "train-uint8" in pick and "at 16 cores (95% interval" in pick
    assert "prediction (USL fit over workers 0..8" in pick
    assert "pillow/open-convert" in default and "prediction (USL fit" in default
    assert sum("to keep a step of 2,000 images/s busy" in line for line in lines) == 2
    assert "rows of another machine" in result.output  # measured elsewhere: that is the point


def test_advise_ranks_divides_the_cores(tmp_path: Path) -> None:
    write_rows(answer_rows(cores=8), tmp_path / "run.parquet")
    runner = CliRunner(env={"COLUMNS": "400"})
    args = ["advise", "--cores", "16", "--step-rate", "2000", "--results", str(tmp_path)]
    alone = runner.invoke(app, args)
    ranked = runner.invoke(app, [*args, "--ranks", "4"])
    assert ranked.exit_code == 0, ranked.output
    lines = ranked.output.splitlines()
    pick = lines.index(next(line for line in lines if line.startswith("Pick (")))
    split = lines[pick + 1]
    assert split.startswith("  with 4 ranks sharing 16 cores: give each rank 4 workers; ")
    assert "4 x one rank at 4 cores, a prediction" in split
    # the total is four times one rank's figure at 4 cores (the same fit: advise --cores 4)
    four = runner.invoke(app, ["advise", "--cores", "4", "--results", str(tmp_path)])
    one_rank = next(line for line in four.output.splitlines() if line.startswith("Pick ("))
    per_rank = float(one_rank.split(": ", 1)[1].split(" images/s")[0].replace(",", ""))
    total = float(split.split("; ")[1].split(" images/s")[0].replace(",", ""))
    assert total == pytest.approx(4 * per_rank, rel=0.01)
    assert any(line.startswith("  with 4 ranks, each with a step of 2,000") for line in lines)
    assert "with 4 ranks" not in alone.output
    bad = runner.invoke(app, [*args, "--ranks", "0"])
    assert bad.exit_code == 2 and "must be > 0" in bad.output


def test_advise_cores_on_two_core_rows_gives_bounds(tmp_path: Path) -> None:
    write_rows(answer_rows(cores=2), tmp_path / "run.parquet")
    result = CliRunner(env={"COLUMNS": "400"}).invoke(
        app, ["advise", "--cores", "16", "--results", str(tmp_path)]
    )
    assert result.exit_code == 0, result.output
    lines = [line for line in result.output.splitlines() if line.startswith(("Pick", "Common"))]
    assert len(lines) == 2
    for line in lines:
        assert "at most" in line and "bound (linear from one core" in line
        assert "not a prediction" in line
    assert "to keep a step" not in result.output
    ranked = CliRunner(env={"COLUMNS": "400"}).invoke(
        app, ["advise", "--cores", "16", "--ranks", "8", "--results", str(tmp_path)]
    )
    split = [line for line in ranked.output.splitlines() if "with 8 ranks" in line]
    assert len(split) == 2
    for line in split:  # a bound stays a bound, never an interval, with the ranks too
        assert "give each rank 2 workers; at most " in line and "not a prediction" in line


def test_advise_target_and_cores_together_and_neither(tmp_path: Path) -> None:
    write_rows(answer_rows(cores=2), tmp_path / "run.parquet")
    runner = CliRunner(env={"COLUMNS": "250"})
    both = runner.invoke(
        app, ["advise", "--target", "300", "--cores", "4", "--results", str(tmp_path)]
    )
    assert both.exit_code == 0, both.output
    assert "Target 300 images/s" in both.output and "at 4 cores" in both.output
    neither = runner.invoke(app, ["advise", "--results", str(tmp_path)])
    assert neither.exit_code == 2
    assert "--target, --cores or --step-rate" in neither.output


@pytest.fixture(scope="module")
def scaling_check() -> ModuleType:
    spec = importlib.util.spec_from_file_location("scaling_check", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def two_runs(tmp_path: Path, two_core_pick: float) -> tuple[Path, Path]:
    """A run under taskset (every worker count on one core; its rows say 2 cores) and a run on
    both cores, of the same configurations."""
    rng = np.random.default_rng(3)
    one = [
        loader_row(COMMON_DEFAULT, 0, 172.0, cores=2, rng=rng, order=0),
        loader_row(COMMON_DEFAULT, 2, 160.0, cores=2, rng=rng, order=1),
        loader_row(UINT8, 0, 396.0, cores=2, rng=rng, order=2),
        loader_row(UINT8, 2, 370.0, cores=2, rng=rng, order=3),
    ]
    two = [
        loader_row(COMMON_DEFAULT, 0, 171.0, cores=2, rng=rng, order=0),
        loader_row(COMMON_DEFAULT, 2, 312.0, cores=2, rng=rng, order=1),
        loader_row(UINT8, 0, 398.0, cores=2, rng=rng, order=2),
        loader_row(UINT8, 2, two_core_pick, cores=2, rng=rng, order=3),
    ]
    folders = tmp_path / "one", tmp_path / "two"
    for folder, rows in zip(folders, (one, two), strict=True):
        folder.mkdir()
        write_rows(rows, folder / "run.parquet")
    return folders


def test_the_check_fits_one_core_and_predicts_two(
    scaling_check: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    one, two = two_runs(tmp_path, two_core_pick=757.0)
    found = scaling_check.checks(load_results(one).frame, load_results(two).frame)
    by_role = {c.role: c for c in found}
    assert set(by_role) == {"pick", "common default"}
    pick, default = by_role["pick"], by_role["common default"]
    assert "train-uint8" in pick.name and "pillow/open-convert" in default.name
    assert pick.kind == default.kind == BOUND  # one core: N = 1 only
    assert "these rows have N = 1)" in pick.label
    assert pick.measured.workers == 2 and pick.measured.cores == 2
    # 2 x the best 1-core figure (0 workers: no hand-off) against the 2-worker row at 2 cores
    zero = points(load_results(one).frame.iloc[2:3])[0][0].images_per_s
    assert pick.predicted.value == pytest.approx(2 * zero)
    assert pick.error == pytest.approx(2 * zero / pick.measured.images_per_s - 1)
    assert pick.inside and default.inside
    assert scaling_check.main([str(one), str(two)]) == 0
    out = capsys.readouterr().out
    assert "pick" in out and "common default" in out and "yes" in out and "%" in out


def test_the_check_says_when_the_measured_figure_is_outside(
    scaling_check: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    one, two = two_runs(tmp_path, two_core_pick=1100.0)  # beyond 2 x one core: no bound held
    assert scaling_check.main([str(one), str(two)]) == 1
    assert "NO" in capsys.readouterr().out
