"""The run-level test on real recorded runs (data/quiet_runs.parquet: 30 runs of the quick suite).

Between two runs of the same code a case's median moves by 8-34% on this machine (see
data/README.md), so rounds pooled over runs are not independent samples; with enough runs per
side the check tests the runs' medians instead. These tests use the real recordings.
"""

from __future__ import annotations

from dataclasses import replace

import pandas as pd
import pytest

from imgbench.compare.config import RegressionConfig, config_from_table
from imgbench.compare.simulate import error_rates
from imgbench.compare.stats import METHOD_RUNS, METHOD_TEST, compare_frames
from imgbench.results.store import load_results
from tests.compare.conftest import DATA, slowed

QUIET_RUNS = DATA / "quiet_runs.parquet"
DECODE = "read/opencv/imdecode-rgb[codec=jpeg,mode=memory,threads=1]"


@pytest.fixture(scope="module")
def quiet() -> pd.DataFrame:
    return load_results(QUIET_RUNS).frame


def _sides(frame: pd.DataFrame, per_side: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Alternate recorded runs between the sides, as `imgbench ci --repeats` interleaves them."""
    order = frame.groupby("run_id")["created_utc"].min().sort_values().index.tolist()
    base = frame[frame["run_id"].isin(order[0::2][:per_side])]
    cand = frame[frame["run_id"].isin(order[1::2][:per_side])]
    return base, cand


def test_the_fixture_is_thirty_real_runs(quiet: pd.DataFrame) -> None:
    assert quiet["run_id"].nunique() == 30
    ok = quiet[quiet["status"] == "ok"]
    assert ok.groupby("run_id")["case_id"].nunique().min() == 36
    assert DECODE in set(ok["case_id"])


def test_aa_with_ten_runs_a_side_is_tested_on_runs_and_passes(quiet: pd.DataFrame) -> None:
    base, cand = _sides(quiet, 10)
    result = compare_frames(base, cand)
    assert set(result.rows["method"]) == {METHOD_RUNS}
    assert result.exit_code == 0, result.regressed_cases
    assert (result.rows["n_baseline"] == 10).all()


def test_pooling_rounds_of_those_runs_raises_false_alarms(quiet: pd.DataFrame) -> None:
    """Why the run-level test exists: the same A/A comparison on pooled rounds cries wolf."""
    base, cand = _sides(quiet, 10)
    pooled = compare_frames(base, cand, replace(RegressionConfig(), min_runs=1000))
    assert METHOD_TEST in set(pooled.rows["method"])
    assert pooled.exit_code == 1 and len(pooled.regressed_cases) >= 2


def test_a_real_slowdown_is_named(quiet: pd.DataFrame) -> None:
    base, cand = _sides(quiet, 10)
    result = compare_frames(base, slowed(cand, DECODE, 1.5))
    assert result.exit_code == 1
    assert result.regressed_cases == [DECODE]
    row = result.rows[
        (result.rows["case_id"] == DECODE) & (result.rows["metric"] == "images_per_s_median")
    ]
    assert row["method"].iloc[0] == METHOD_RUNS
    assert row["ci_low"].iloc[0] < row["ratio"].iloc[0] < row["ci_high"].iloc[0]


def test_few_runs_fall_back_to_rounds(quiet: pd.DataFrame) -> None:
    base, cand = _sides(quiet, 3)
    result = compare_frames(base, cand)
    throughput = result.rows[result.rows["metric"] == "images_per_s_median"]
    assert set(throughput["method"]) == {METHOD_TEST}


def test_min_runs_is_configurable() -> None:
    assert config_from_table({"min_runs": 8}).min_runs == 8
    assert config_from_table({"min_runs": 0}).min_runs == 2  # a test needs two runs a side


def test_simulated_error_rates_on_the_real_runs(quiet: pd.DataFrame) -> None:
    """Seeded and small: the figures in docs/regression.md come from more trials."""
    rates = error_rates(quiet, 100, scheme="runs", repeats=10, trials=12, slowdowns=(0.1, 0.5))
    assert rates.cases == 36 and rates.runs == 30
    assert rates.false_alarm_rate <= 0.05
    assert rates.power[0.5] > rates.power[0.1]
