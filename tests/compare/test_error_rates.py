"""Error rates simulated from the real recorded runs in data/aa_runs.parquet (seeded: repeatable).

The full figures (more trials, more round counts) come from
``python -m imgbench.compare.simulate tests/compare/data/aa_runs.parquet`` and are in
docs/regression.md; this test keeps the simulation honest and the main findings true.
"""

from __future__ import annotations

import pandas as pd
import pytest

from imgbench.compare.simulate import error_rates, recorded_runs

TRIALS = 25


def test_the_fixture_is_real_repeated_runs(aa_frame: pd.DataFrame) -> None:
    runs = recorded_runs(aa_frame)
    assert len(runs) == 21 and len(runs[0]) == 6
    assert all(len(c.per_round["images_per_s_median"]) == 100 for c in runs[0].values())


def test_round_level_interleaving_controls_false_alarms(aa_frame: pd.DataFrame) -> None:
    split = error_rates(aa_frame, 20, scheme="split", trials=TRIALS)
    separate = error_rates(aa_frame, 20, scheme="separate", trials=TRIALS)
    # same code, rounds dealt alternately: rare alarms; two runs minutes apart on a shared
    # machine: the run-to-run swing dwarfs a 10% threshold
    assert split.false_alarm_rate <= 0.08
    assert separate.false_alarm_rate > split.false_alarm_rate
    assert split.power[0.20] >= split.power[0.05]
    assert split.power[0.20] > split.false_alarm_rate


def test_unknown_scheme_and_too_few_runs_are_refused(aa_frame: pd.DataFrame) -> None:
    with pytest.raises(ValueError, match="scheme"):
        error_rates(aa_frame, 5, scheme="nope", trials=1)
    first = aa_frame[aa_frame["run_id"] == aa_frame["run_id"].iloc[0]]
    with pytest.raises(ValueError, match="needs 6 runs"):
        error_rates(first, 5, scheme="interleaved", repeats=3, trials=1)
