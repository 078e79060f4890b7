"""How likely a wall-time comparison was to catch a slowdown of its threshold: its power.

A wall-time verdict may only block a build where it would have caught a real slowdown of the
threshold's size with high probability on this runner; elsewhere a pass means little and the
verdict is advisory. The power comes from the comparison's own data: the scatter of the runs'
log medians on both sides (the unit the run-level test uses), the number of runs, and the
per-test level Holm's first step applies (alpha / cases tested), through the noncentral t
distribution, as statsmodels' ``TTestIndPower`` computes it. A permutation test cannot go below
``1 / C(n, k)``; where that floor is above the level, the power is zero.

Rounds of one run per side do not sample the variation between processes, which is most of it
on a shared machine (docs/regression.md), so no power is claimed for them.
"""

from __future__ import annotations

import math

import numpy as np


def permutation_floor(n_baseline: int, n_candidate: int) -> float:
    """The smallest p-value a permutation test of these many runs can return."""
    return 1.0 / math.comb(n_baseline + n_candidate, n_candidate)


def run_level_power(
    log_baseline: np.ndarray, log_candidate: np.ndarray, threshold: float, level: float
) -> float:
    """Power of the one-sided run-level test to flag a slowdown of ``threshold`` at ``level``.

    ``log_*`` are the logs of each run's median. The spread is the pooled within-side standard
    deviation (a shift between the sides is what is tested, so it must not count as noise).
    """
    nb, nc = len(log_baseline), len(log_candidate)
    if min(nb, nc) < 2 or permutation_floor(nb, nc) > level:
        return 0.0
    df = nb + nc - 2
    pooled = (
        (nb - 1) * np.var(log_baseline, ddof=1) + (nc - 1) * np.var(log_candidate, ddof=1)
    ) / df
    effect = math.log1p(threshold)
    if pooled <= 0:
        return 1.0
    noncentrality = effect / math.sqrt(pooled * (1 / nb + 1 / nc))
    from scipy import stats  # 0.4 s to import: only a comparison pays for it

    critical = stats.t.ppf(1 - level, df)
    return float(stats.nct.sf(critical, df, noncentrality))
