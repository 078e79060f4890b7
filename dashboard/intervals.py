"""Medians with 95% intervals from the raw round times (``samples_s``), for the pages' bars.

These describe one configuration; they judge nothing. Whether a run regressed is decided by
``imgbench.compare`` alone (the Compare page calls it), so the dashboard and ``imgbench compare``
cannot disagree.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

Z95 = 1.96


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
