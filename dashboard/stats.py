"""Confidence intervals and run comparison from the raw round times (``samples_s``).

The comparison prefers ``imgbench.compare.stats.compare_frames`` (the CI regression checker) when
it is installed, so the dashboard and CI agree; otherwise it falls back to a small version here:
ratio of medians, two-sided Mann-Whitney U on the per-round throughputs, Holm correction.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import mannwhitneyu

from imgbench.results.schema import HIGHER_IS_BETTER

Z95 = 1.96
COMPARE_COLUMNS = ["case_id", "baseline", "candidate", "ratio", "p_value", "p_holm", "verdict"]


def round_throughputs(row: pd.Series) -> np.ndarray:
    """Images/s of every timed round of one row (empty if the row has no samples)."""
    samples = row.get("samples_s")
    images = row.get("images_per_round")
    if samples is None or images is None or pd.isna(images):
        return np.empty(0)
    times = np.asarray(samples, dtype=float)
    times = times[times > 0]
    return float(images) / times


def median_ci(values: np.ndarray) -> tuple[float, float, float]:
    """Median and a distribution-free 95% interval (order statistics around n/2)."""
    values = np.sort(values[np.isfinite(values)])
    n = values.size
    if n == 0:
        return (math.nan, math.nan, math.nan)
    half = Z95 * math.sqrt(n) / 2
    lo = max(math.floor(n / 2 - half), 1)
    hi = min(math.ceil(n / 2 + half), n)
    return float(np.median(values)), float(values[lo - 1]), float(values[hi - 1])


def summarise(rows: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    """Per configuration: median images/s with its 95% interval, pooled over the rows' rounds."""
    records = []
    for group_key, group in rows.groupby(list(keys), dropna=False, sort=False):
        pooled = [round_throughputs(r) for _, r in group.iterrows()]
        values = np.concatenate(pooled) if pooled else np.empty(0)
        median, lo, hi = median_ci(values)
        if not np.isfinite(median):  # rows without samples: fall back to the stored medians
            median = float(group["images_per_s_median"].median())
            lo = float(group["images_per_s_q1"].median())
            hi = float(group["images_per_s_q3"].median())
        keys_tuple = group_key if isinstance(group_key, tuple) else (group_key,)
        record = dict(zip(keys, keys_tuple, strict=True))
        record.update(
            images_per_s=median,
            ci_low=lo,
            ci_high=hi,
            mb_per_s=float(group["mb_per_s_median"].median()),
            megapixels_per_s=float(group["megapixels_per_s_median"].median()),
            latency_ms_p50=float(group["latency_ms_median"].median()),
            latency_ms_p99=float(group["latency_ms_p99"].median()),
            library_version=", ".join(
                sorted(group["library_version"].dropna().astype(str).unique())
            ),
            rows=len(group),
            rounds=int(values.size),
        )
        records.append(record)
    return pd.DataFrame.from_records(records)


def holm(p_values: Sequence[float]) -> np.ndarray:
    """Holm-Bonferroni adjusted p-values (NaN stays NaN)."""
    p = np.asarray(p_values, dtype=float)
    adjusted = np.full_like(p, np.nan)
    valid = np.flatnonzero(np.isfinite(p))
    order = valid[np.argsort(p[valid])]
    m = order.size
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[index]))
        adjusted[index] = running
    return adjusted


def _one_per_case(rows: pd.DataFrame) -> pd.DataFrame:
    rows = rows[rows["status"] == "ok"]
    return rows.drop_duplicates("case_id", keep="last").set_index("case_id")


def compare_simple(
    baseline: pd.DataFrame,
    candidate: pd.DataFrame,
    metric: str = "images_per_s_median",
    threshold: float = 0.10,
    alpha: float = 0.05,
) -> pd.DataFrame:
    """Ratio candidate / baseline per common case, Mann-Whitney U on rounds, Holm-corrected."""
    base, cand = _one_per_case(baseline), _one_per_case(candidate)
    common = base.index.intersection(cand.index)
    records = []
    for case_id in common:
        b, c = base.loc[case_id], cand.loc[case_id]
        b_value, c_value = float(b[metric]), float(c[metric])
        ratio = c_value / b_value if b_value else math.nan
        b_rounds, c_rounds = round_throughputs(b), round_throughputs(c)
        p_value = math.nan
        if metric != "peak_rss_bytes" and b_rounds.size >= 3 and c_rounds.size >= 3:
            p_value = float(mannwhitneyu(b_rounds, c_rounds, alternative="two-sided").pvalue)
        records.append(
            {
                "case_id": case_id,
                "stage": c["stage"],
                "library": c["library"],
                "baseline": b_value,
                "candidate": c_value,
                "ratio": ratio,
                "p_value": p_value,
            }
        )
    frame = pd.DataFrame.from_records(
        records,
        columns=["case_id", "stage", "library", "baseline", "candidate", "ratio", "p_value"],
    )
    frame["p_holm"] = holm(frame["p_value"].tolist())
    frame["verdict"] = [
        verdict(r, p, metric, threshold, alpha)
        for r, p in zip(frame["ratio"], frame["p_holm"], strict=True)
    ]
    return frame


def verdict(ratio: float, p_adjusted: float, metric: str, threshold: float, alpha: float) -> str:
    """improved / regressed only when both significant and larger than the practical threshold."""
    if not np.isfinite(ratio):
        return "no data"
    better = ratio if HIGHER_IS_BETTER.get(metric, True) else 1.0 / ratio
    if abs(better - 1.0) <= threshold:
        return "unchanged"
    if not np.isfinite(p_adjusted):
        return "changed (untested)"
    if p_adjusted >= alpha:
        return "unchanged"
    return "improved" if better > 1.0 else "regressed"


def _checker() -> tuple[Any, Any, type[Exception]] | None:
    """The CI regression checker's ``compare_frames``, its config and its input error, if present."""
    try:
        from imgbench.compare.config import RegressionConfig
        from imgbench.compare.stats import CompareInputError, compare_frames
    except Exception:
        return None
    return compare_frames, RegressionConfig, CompareInputError


@dataclass
class Comparison:
    table: pd.DataFrame  # COMPARE_COLUMNS, plus ci_low / ci_high / method where known
    method: str
    warnings: list[str] = field(default_factory=list)


def compare_runs(
    baseline: pd.DataFrame,
    candidate: pd.DataFrame,
    metric: str = "images_per_s_median",
    threshold: float = 0.10,
    alpha: float = 0.05,
) -> Comparison:
    """The case-by-case comparison, by the CI checker when installed, so both agree."""
    checker = _checker()
    if checker is None:
        return Comparison(
            compare_simple(baseline, candidate, metric, threshold, alpha),
            "dashboard: two-sided Mann-Whitney U on per-round throughput, Holm-corrected",
        )
    compare_frames, config_class, input_error = checker
    config = config_class(threshold=threshold, alpha=alpha, metrics=(metric,), advisory=())
    try:
        result = compare_frames(baseline, candidate, config, allow_cross_machine=True)
    except input_error as exc:  # e.g. other datasets: the checker refuses, the page still shows
        return Comparison(
            compare_simple(baseline, candidate, metric, threshold, alpha),
            "dashboard: two-sided Mann-Whitney U, Holm-corrected",
            [f"The CI checker refuses this pair ({exc}); shown with the dashboard's own test."],
        )
    rows = result.rows
    names = candidate.drop_duplicates("case_id").set_index("case_id")["library"]
    table = pd.DataFrame(
        {
            "case_id": rows["case_id"],
            "stage": rows["stage"],
            "library": rows["case_id"].map(names),
            "baseline": rows["baseline"],
            "candidate": rows["candidate"],
            "ratio": rows["ratio"],
            "ci_low": rows["ci_low"],
            "ci_high": rows["ci_high"],
            "p_value": rows[["p_worse", "p_better"]].min(axis=1),
            "p_holm": rows[["p_worse_adjusted", "p_better_adjusted"]].min(axis=1),
            "method": rows["method"],
            "verdict": rows["verdict"],
        }
    )
    method = (
        f"imgbench.compare (the CI checker): one-sided Mann-Whitney U, {config.correction} "
        f"correction, decided on the {int(config.confidence * 100)}% bootstrap CI"
    )
    return Comparison(table, method, list(result.warnings))
