"""A single-run compare of a make-bench-sized file names a clear 15% slowdown of one case.

451 cases of 10 rounds each, every case's rounds taken from real recorded runs (their real
scatter, 1-11%); one case slowed by 15%. With the asymptotic Mann-Whitney p-value, 10 vs 10
rounds could not go below 9e-5, which Holm over 451 cases lifts past alpha = 0.01: the slowdown
was reported "unchanged". The exact distribution's floor is 5.4e-6 (1 / C(20, 10)).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from imgbench.compare.config import RegressionConfig
from imgbench.compare.stats import compare_frames, one_sided_p
from tests.compare.conftest import slowed

CASES = 451
ROUNDS = 10


def _bench_sized(aa_frame: pd.DataFrame) -> pd.DataFrame:
    first = aa_frame[aa_frame["run_id"] == sorted(aa_frame["run_id"].unique())[0]]
    sources = first.reset_index(drop=True)
    rows = []
    for i in range(CASES):
        row = sources.iloc[i % len(sources)].copy()
        start = (i // len(sources)) % (len(row["samples_s"]) - ROUNDS)
        row["samples_s"] = np.asarray(row["samples_s"], dtype=float)[start : start + ROUNDS]
        row["case_id"] = f"{row['case_id']}#{i}"
        rows.append(row)
    return pd.DataFrame(rows).reset_index(drop=True)


def test_the_exact_test_reaches_below_the_asymptotic_floor() -> None:
    base = np.linspace(1.0, 1.01, ROUNDS)
    assert one_sided_p(base, base / 1.15, "less") < 1e-5  # 1 / C(20, 10) = 5.4e-6


def test_one_case_slowed_15_percent_in_451_is_named(aa_frame: pd.DataFrame) -> None:
    frame = _bench_sized(aa_frame)
    scatter = frame["samples_s"].apply(lambda s: np.std(s) / np.mean(s))
    target = str(frame.loc[scatter.idxmin(), "case_id"])  # the steadiest: ~1% scatter
    # the tested metric only, and fewer bootstrap resamples: the verdict rests on the test
    config = RegressionConfig().with_overrides(metrics=("images_per_s_median",), resamples=400)
    result = compare_frames(frame, slowed(frame, target, 1.15), config)
    assert result.exit_code == 1
    assert result.regressed_cases == [target]
    same = compare_frames(frame, frame, config)
    assert same.exit_code == 0 and not same.regressed_cases
