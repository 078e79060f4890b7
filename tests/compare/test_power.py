"""A wall-time verdict blocks only where its measured power at the threshold reaches min_power.

The power estimate is checked against the real run-level test by simulation, and the gate's rule
on the 30 recorded runs of this machine (data/quiet_runs.parquet) and on a steady synthetic runner.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from imgbench.compare.config import ConfigError, RegressionConfig, config_from_table
from imgbench.compare.power import permutation_floor, run_level_power
from imgbench.compare.report import to_markdown
from imgbench.compare.stats import ComparisonResult, compare_frames, run_level_test
from imgbench.results.store import load_results
from tests.compare.conftest import DATA, slowed

DECODE = "read/opencv/imdecode-rgb[codec=jpeg,mode=memory,threads=1]"
GATE = replace(RegressionConfig(), min_power=0.95)


@pytest.mark.parametrize("sigma", [0.02, 0.05])
def test_the_estimate_matches_the_run_level_tests_rejection_rate(sigma: float) -> None:
    """Simulated runs shifted by exactly the threshold: how often the real test rejects."""
    rng = np.random.default_rng(7)
    runs, level, threshold, trials = 10, 0.01 / 36, 0.10, 400
    base = rng.normal(0.0, sigma, (trials, runs))
    cand = rng.normal(-np.log1p(threshold), sigma, (trials, runs))  # images/s: lower is worse
    rejected = [
        run_level_test(np.exp(b), np.exp(c), 0.95).p["less"] < level
        for b, c in zip(base, cand, strict=True)
    ]
    estimates = [run_level_power(-b, -c, threshold, level) for b, c in zip(base, cand, strict=True)]
    assert abs(np.mean(rejected) - np.median(estimates)) < 0.1


def test_a_permutation_test_that_cannot_reach_the_level_has_no_power() -> None:
    steady = np.log(np.full(5, 100.0)) + np.linspace(-1e-4, 1e-4, 5)
    assert permutation_floor(5, 5) == pytest.approx(1 / 252)
    assert run_level_power(steady, steady, 0.10, 0.01 / 36) == 0.0
    wide = np.linspace(-1e-4, 1e-4, 10)
    assert run_level_power(wide, wide, 0.10, 0.01 / 36) > 0.99  # 10 a side: floor 5.4e-6


@pytest.fixture(scope="module")
def quiet() -> pd.DataFrame:
    frame = load_results(DATA / "quiet_runs.parquet").frame
    order = frame.groupby("run_id")["created_utc"].min().sort_values().index.tolist()
    frame.attrs["order"] = order
    return frame


def _sides(frame: pd.DataFrame, per_side: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    order = frame.attrs["order"]
    return (
        frame[frame["run_id"].isin(order[0::2][:per_side])],
        frame[frame["run_id"].isin(order[1::2][:per_side])],
    )


def test_on_this_machines_runs_a_caught_slowdown_is_advisory(quiet: pd.DataFrame) -> None:
    """10 runs a side of the real recordings: far below 95% power at 10%, so even a 50%
    slowdown that the test catches does not block, and the report says why."""
    base, cand = _sides(quiet, 10)
    result = compare_frames_gate(base, slowed(cand, DECODE, 1.5))
    throughput = result.rows[result.rows["metric"] == "images_per_s_median"]
    assert throughput["power"].notna().all()
    assert throughput["power"].max() < 0.95
    decode = throughput[throughput["case_id"] == DECODE].iloc[0]
    assert decode["verdict"] == "regressed" and not decode["gating"]
    assert result.exit_code == 0
    markdown = to_markdown(result)
    assert "wall-time power" in markdown
    assert "images/s at 10%: median" in markdown and "0 of 36 reach 95% and block" in markdown
    assert "regressed (advisory)" in markdown


def test_without_min_power_the_same_verdict_blocks(quiet: pd.DataFrame) -> None:
    base, cand = _sides(quiet, 10)
    result = compare_frames_gate(base, slowed(cand, DECODE, 1.5), RegressionConfig())
    assert result.regressed_cases == [DECODE]


def _steady_runs(per_side: int, scatter: float, factor: float, seed: int) -> pd.DataFrame:
    """Real recorded rows of one case, each run's rounds rescaled to a steady runner's."""
    frame = load_results(DATA / "quiet_runs.parquet").frame
    rows = frame[(frame["case_id"] == DECODE) & (frame["status"] == "ok")].head(per_side).copy()
    rng = np.random.default_rng(seed)
    level = float(np.median(np.concatenate(rows["samples_s"].to_list())))
    rows["samples_s"] = [
        np.full(len(s), level) * np.exp(rng.normal(0, scatter)) * factor for s in rows["samples_s"]
    ]
    return rows


def test_on_a_steady_runner_the_wall_verdict_blocks() -> None:
    base = _steady_runs(10, 0.01, 1.0, seed=1)
    cand = _steady_runs(10, 0.01, 1.3, seed=2)
    result = compare_frames_gate(base, cand)
    row = result.rows[result.rows["metric"] == "images_per_s_median"].iloc[0]
    assert row["power"] > 0.99 and row["gating"]
    assert result.exit_code == 1 and result.regressed_cases == [DECODE]


def test_min_power_is_validated() -> None:
    assert config_from_table({"min_power": 0.9}).min_power == 0.9
    with pytest.raises(ConfigError, match="min_power"):
        config_from_table({"min_power": 1.5})


def compare_frames_gate(
    base: pd.DataFrame, cand: pd.DataFrame, config: RegressionConfig = GATE
) -> ComparisonResult:
    return compare_frames(base, cand, config)
