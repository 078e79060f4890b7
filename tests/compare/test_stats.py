"""The decision rule on real recorded runs: itself, a slowed copy, bad input, thresholds, ignores."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from imgbench.compare import CompareInputError, RegressionConfig, compare_frames
from imgbench.compare.config import Ignore, Rule
from imgbench.compare.stats import METHOD_THRESHOLD, adjust, holm
from tests.compare.conftest import slowed

READ_JPEG = "read/pillow/open-convert[codec=jpeg,mode=memory,threads=1]"


def test_holm_matches_the_textbook_example() -> None:
    p = np.array([0.01, 0.04, 0.03, 0.005])
    # sorted 0.005*4=0.02, 0.01*3=0.03, 0.03*2=0.06, 0.04*1=0.04 -> monotone 0.06
    assert holm(p) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert adjust(p, "bh") == pytest.approx(sps.false_discovery_control(p, method="bh"))
    assert len(holm(np.array([]))) == 0


def test_a_run_against_itself_is_unchanged(one_run: pd.DataFrame) -> None:
    result = compare_frames(one_run, one_run)
    assert result.exit_code == 0
    assert set(result.rows["verdict"]) == {"unchanged"}
    # images/s, three latencies, peak RSS: MB/s and MP/s are not tested again by default
    assert result.geomean()["geomean_ratio"].tolist() == pytest.approx([1.0] * 5)
    tested = result.rows[result.rows["metric"] == "images_per_s_median"]
    assert (tested["method"] == "mann-whitney").all()
    assert (tested["n_baseline"] == one_run.loc[one_run.status == "ok", "rounds"].iloc[0]).all()


@pytest.mark.parametrize("correction", ["holm", "bh"])
def test_one_case_slowed_by_15_percent_is_named(one_run: pd.DataFrame, correction: str) -> None:
    result = compare_frames(
        one_run, slowed(one_run, READ_JPEG, 1.15), RegressionConfig(correction=correction)
    )
    assert result.exit_code == 1
    assert result.regressed_cases == [READ_JPEG]
    row = result.rows.set_index(["case_id", "metric"]).loc[(READ_JPEG, "images_per_s_median")]
    assert row["ratio"] == pytest.approx(1 / 1.15, rel=1e-6)
    assert row["ci_low"] <= row["ratio"] <= row["ci_high"]
    assert row["p_worse_adjusted"] < 0.05


def test_a_faster_candidate_is_improved_not_regressed(one_run: pd.DataFrame) -> None:
    result = compare_frames(one_run, slowed(one_run, READ_JPEG, 1 / 1.3))
    assert result.exit_code == 0
    verdicts = result.rows.set_index(["case_id", "metric"])["verdict"]
    assert verdicts[(READ_JPEG, "images_per_s_median")] == "improved"


def test_small_significant_change_stays_under_the_median_threshold(one_run: pd.DataFrame) -> None:
    result = compare_frames(
        one_run, slowed(one_run, READ_JPEG, 1.03), RegressionConfig(decide_on="median")
    )
    assert result.exit_code == 0


def test_per_case_rule_and_ignore(one_run: pd.DataFrame) -> None:
    cand = slowed(one_run, READ_JPEG, 1.15)
    lenient = RegressionConfig(rules=(Rule(threshold=0.5, case="read/pillow/*"),))
    assert compare_frames(one_run, cand, lenient).exit_code == 0
    by_stage = RegressionConfig(rules=(Rule(threshold=0.5, stage="read"),))
    assert compare_frames(one_run, cand, by_stage).exit_code == 0
    ignored = RegressionConfig(ignores=(Ignore(reason="flaky on shared runners", case=READ_JPEG),))
    result = compare_frames(one_run, cand, ignored)
    assert result.exit_code == 0
    assert result.ignored == {READ_JPEG: "flaky on shared runners"}
    assert READ_JPEG not in set(result.rows["case_id"])


def test_memory_is_judged_by_threshold_alone(one_run: pd.DataFrame) -> None:
    cand = one_run.copy()
    mask = cand["case_id"] == READ_JPEG
    cand.loc[mask, "peak_rss_bytes"] = cand.loc[mask, "peak_rss_bytes"] * 1.3
    result = compare_frames(one_run, cand)
    assert result.exit_code == 1 and result.regressed_cases == [READ_JPEG]
    row = result.regressed.iloc[0]
    assert row["metric"] == "peak_rss_bytes" and row["method"] == METHOD_THRESHOLD
    assert any("no raw samples" in w for w in result.warnings)


def test_latency_is_advisory_by_default(one_run: pd.DataFrame) -> None:
    cand = one_run.copy()
    cand["latency_ms_p99"] = cand["latency_ms_p99"] * 3
    result = compare_frames(one_run, cand)
    assert result.exit_code == 0
    assert len(result.advisory_regressions) == (one_run.status == "ok").sum()
    gated = RegressionConfig(advisory=())
    assert compare_frames(one_run, cand, gated).exit_code == 1


def test_unusable_input_is_refused(one_run: pd.DataFrame) -> None:
    other = one_run.copy()
    other["case_id"] = other["case_id"] + "-renamed"
    with pytest.raises(CompareInputError, match="no common cases"):
        compare_frames(one_run, other)
    other = one_run.copy()
    other["dataset_fingerprint"] = "0123456789abcdef"
    with pytest.raises(CompareInputError, match="different datasets"):
        compare_frames(one_run, other)


def test_cross_machine_needs_consent_and_is_warned(one_run: pd.DataFrame) -> None:
    other = one_run.copy()
    other["machine_id"], other["hostname"] = "another-machine", "runner-7"
    with pytest.raises(CompareInputError, match="--allow-cross-machine"):
        compare_frames(one_run, other)
    result = compare_frames(one_run, other, allow_cross_machine=True)
    assert result.exit_code == 0
    assert any("cross-machine" in w and "runner-7" in w for w in result.warnings)


def test_cases_pooled_over_different_numbers_of_processes_are_warned(
    one_run: pd.DataFrame,
) -> None:
    one, three = one_run.copy(), one_run.copy()
    one["processes"], three["processes"] = 1, 1
    assert not any("worker processes" in w for w in compare_frames(one, three).warnings)
    first = three["case_id"].iloc[0]
    three.loc[three["case_id"] == first, "processes"] = 3
    (warning,) = [w for w in compare_frames(one, three).warnings if "worker processes" in w]
    assert warning.startswith("1 case(s)") and "baseline 1 vs candidate 3" in warning


def test_sides_measured_under_different_address_layouts_are_warned(one_run: pd.DataFrame) -> None:
    fixed, randomized = one_run.copy(), one_run.copy()
    fixed["address_layout"], randomized["address_layout"] = "fixed", "randomized"
    assert not any("address layouts" in w for w in compare_frames(fixed, fixed).warnings)
    result = compare_frames(fixed, randomized)
    assert any("address layouts" in w and "randomized" in w for w in result.warnings)


def test_repeated_runs_on_one_side_pool_their_rounds(aa_frame: pd.DataFrame) -> None:
    runs = sorted(aa_frame["run_id"].unique())
    base = aa_frame[aa_frame["run_id"].isin(runs[:2])]
    result = compare_frames(base, base)
    row = result.rows[result.rows["metric"] == "images_per_s_median"].iloc[0]
    rounds = aa_frame.loc[aa_frame["run_id"] == runs[0], "rounds"].dropna().iloc[0]
    assert row["n_baseline"] == 2 * rounds
