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
from imgbench.answer.systems import figure_places, round_figure

__all__ = ["median_ci", "round_throughputs", "rounded", "summarise"]


def rounded(table: pd.DataFrame, value: str, low: str, high: str) -> pd.DataFrame:
    """``table`` with ``value`` and its interval ``low``-``high`` rounded, row by row, to what
    the interval supports (``imgbench.answer.systems.figure_places``: at most three significant
    figures, nothing finer than the leading digit of the interval's width); each bound keeps no
    more digits than its figure, nor more than three significant figures."""
    out = table.copy()
    for column in (value, low, high):
        out[column] = out[column].astype(float)
    for index, row in table.iterrows():
        places = figure_places(row[value], row[low], row[high])
        out.at[index, value] = round_figure(row[value], places)
        for column in (low, high):
            out.at[index, column] = round_figure(
                row[column], min(places, figure_places(row[column]))
            )
    return out


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
