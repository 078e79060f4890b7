"""Medians with 95% intervals from the raw round times (``samples_s``), for the pages' bars
(the interval itself is ``imgbench.answer.intervals``', shared with the answer and the report).

These describe one configuration; they judge nothing. Whether a run regressed is decided by
``imgbench.compare`` alone (the Compare page calls it), so the dashboard and ``imgbench compare``
cannot disagree.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from imgbench.answer.intervals import median_ci, round_throughputs

__all__ = ["median_ci", "round_throughputs", "summarise"]


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
