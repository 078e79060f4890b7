"""The allocator as a dimension: the same case measured under several allocators, side by side.

``imgbench run --profile default`` measures a few reader, augmentation and loader cases again in
"allocator sessions" (glibc-tuned, jemalloc, tcmalloc; ``imgbench.measure.allocator``). Their
rows carry ``"allocator": NAME`` in their parameters, so their ``case_id`` contains
``allocator=NAME``; the main session's rows have no such parameter. A case's rows under different
allocators are matched on the ``case_id`` with that parameter removed (plus machine, dataset and
environment), and compared with the 95% intervals the other charts use.

The pages' other charts show one allocator only (``main_session``): pooling the rounds of one case
under glibc and under jemalloc into one bar would describe neither.
"""

from __future__ import annotations

from dataclasses import dataclass

import altair as alt
import numpy as np
import pandas as pd
import streamlit as st

from dashboard.charts import IMAGES_PER_S, bars_with_interval, show
from dashboard.intervals import summarise

BASELINE = "glibc"  # what every other allocator is compared with, where it was measured
SESSIONS_HINT = "`imgbench run --profile default` runs the allocator sessions"
# the allocator parameter inside a case_id "stage/library/variant[k=v,k=v]" (keys sorted)
_PARAM = r"(?<=\[)allocator=[^,\]]*,?|,allocator=[^,\]]*"
_MATCH = ["machine_id", "dataset_fingerprint", "environment", "base_case_id"]


@dataclass(frozen=True)
class Effect:
    """One allocator against the baseline on one case."""

    case: str
    allocator: str
    baseline: str
    factor: float  # images/s under ``allocator`` over images/s under ``baseline``
    images_per_s: float
    baseline_images_per_s: float
    beyond_noise: bool  # the two 95% intervals of the median do not overlap

    def text(self) -> str:
        """``pillow · open-convert: glibc-tuned 1.9x glibc (1,830 vs 960 images/s)``"""
        noise = "" if self.beyond_noise else ", within noise"
        return (
            f"{self.case}: {self.allocator} {times(self.factor)} {self.baseline} "
            f"({self.images_per_s:,.0f} vs {self.baseline_images_per_s:,.0f} images/s{noise})"
        )


def times(factor: float) -> str:
    """1.9x, 12x; two decimals near 1 (1.04x), where one would round a change away."""
    return f"{factor:.2f}x" if 0.9 < factor < 1.1 else f"{factor:.2g}x"


def has_allocator_param(rows: pd.DataFrame) -> pd.Series:
    """Rows of an allocator session (their case_id carries the allocator parameter)."""
    return rows["case_id"].fillna("").astype(str).str.contains(r"[\[,]allocator=", regex=True)


def base_case_id(case_ids: pd.Series) -> pd.Series:
    """The case_id without its allocator parameter: equal for one case under every allocator."""
    return case_ids.fillna("").astype(str).str.replace(_PARAM, "", regex=True)


def allocators_of(rows: pd.DataFrame) -> list[str]:
    """The allocators the rows recorded (rows from before the column have none)."""
    return sorted(rows["allocator"].dropna().astype(str).unique())


def case_label(rows: pd.DataFrame) -> pd.Series:
    """``library · variant`` plus what tells a stage's cases apart: codec and threads for a
    reader (``threads_label`` of ``dashboard.data.label``), workers for a loader."""
    label = rows["library"].astype(str) + " · " + rows["variant"].astype(str)
    codec = rows["codec"].fillna("").astype(str)
    label = label.where(codec == "", label + " · " + codec)
    threads = (
        rows["threads_label"].astype(str).map(lambda t: "1 thread" if t == "1" else f"{t} threads")
    )
    label = label.where(rows["stage"] != "read", label + " · " + threads)
    workers = pd.to_numeric(rows["workers"], errors="coerce")
    loader = rows["stage"] == "loader"
    label = label.where(
        ~loader, label + " · " + workers.fillna(0).astype(int).astype(str) + " workers"
    )
    return label


def main_session(rows: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(rows the page's charts show, rows set aside): the main session's rows (no allocator
    parameter); when the filters left only allocator sessions, those of the most frequent one."""
    session = has_allocator_param(rows)
    if not session.any():
        return rows, rows.iloc[:0]
    if not session.all():
        return rows[~session], rows[session]
    names = rows["allocator"].fillna("?").astype(str)
    keep = names == names.value_counts().index[0]
    return rows[keep], rows[~keep]


def set_aside_caption(shown: pd.DataFrame, aside: pd.DataFrame) -> None:
    """Say which allocator the page's charts show, when rows of others were set aside."""
    if aside.empty:
        return
    names = ", ".join(allocators_of(aside)) or "other allocators"
    shown_names = ", ".join(allocators_of(shown)) or "unrecorded"
    st.caption(
        f"Charts show the rows measured under {shown_names}; {len(aside)} rows of the allocator "
        f"sessions ({names}) are compared under **Allocator effect** at the bottom of the page."
    )


def effects(rows: pd.DataFrame, label: str) -> pd.DataFrame:
    """Per case measured under more than one allocator, one row per allocator: median images/s
    with its 95% interval, page faults per image, and the factor over the case's baseline (glibc
    where measured, else the slowest allocator). ``label`` names the column that labels a case."""
    rows = rows[rows["allocator"].notna() & rows["images_per_s_median"].notna()]
    if rows.empty or rows["allocator"].nunique() < 2:
        return pd.DataFrame()
    rows = rows.assign(
        base_case_id=base_case_id(rows["case_id"]),
        allocator=rows["allocator"].astype(str),
        case=rows[label].astype(str),
    )
    for column in _MATCH[:3]:
        rows[column] = rows[column].fillna("?").astype(str)
    several = rows.groupby(_MATCH)["allocator"].transform("nunique") > 1
    rows = rows[several]
    if rows.empty:
        return pd.DataFrame()
    rows = rows.assign(case=_distinct_labels(rows))
    summary = summarise(rows, ["case", "allocator"])
    faults = rows.groupby(["case", "allocator"], as_index=False)[
        ["page_faults_minor_per_image", "page_faults_major_per_image"]
    ].median()
    summary = summary.merge(faults, on=["case", "allocator"], how="left")
    baselines = summary.groupby("case")[["allocator", "images_per_s"]].apply(_baseline)
    summary["baseline"] = summary["case"].map(baselines)
    base = summary[summary["allocator"] == summary["baseline"]].set_index("case")
    summary["baseline_images_per_s"] = summary["case"].map(base["images_per_s"])
    summary["factor"] = summary["images_per_s"] / summary["baseline_images_per_s"]
    apart = (summary["ci_low"] > summary["case"].map(base["ci_high"])) | (
        summary["ci_high"] < summary["case"].map(base["ci_low"])
    )
    summary["beyond_noise"] = apart & (summary["allocator"] != summary["baseline"])
    return summary.sort_values(["case", "allocator"]).reset_index(drop=True)


def _baseline(group: pd.DataFrame) -> str:
    names = set(group["allocator"])
    if BASELINE in names:
        return BASELINE
    return str(group.loc[group["images_per_s"].idxmin(), "allocator"])


def _distinct_labels(rows: pd.DataFrame) -> pd.Series:
    """The page's label, plus the dataset, machine or a number where the label alone would put two
    different cases (other params, data or machine) in one panel."""
    labels = rows["case"].copy()
    for column, extra in (("dataset_fingerprint", "dataset_name"), ("machine_id", "hostname")):
        if rows[column].nunique() > 1:
            labels = labels + " · " + rows[extra].fillna(rows[column]).astype(str)
    keys = rows[_MATCH].astype(str).agg("|".join, axis=1)
    for label in labels.unique():
        same = labels == label
        distinct = keys[same].unique()
        if len(distinct) > 1:
            numbers = {key: index + 1 for index, key in enumerate(sorted(distinct))}
            labels[same] = label + " #" + keys[same].map(numbers).astype(str)
    return labels


def largest(summary: pd.DataFrame, baseline: str | None = None) -> Effect | None:
    """The allocator farthest from its case's baseline (a slowdown counts as much as a speed-up);
    with ``baseline``, only effects against that allocator."""
    others = summary[summary["allocator"] != summary["baseline"]] if not summary.empty else summary
    if baseline is not None and not others.empty:
        others = others[others["baseline"] == baseline]
    others = others[np.isfinite(others["factor"]) & (others["factor"] > 0)]
    if others.empty:
        return None
    return _effect(others.loc[np.log(others["factor"]).abs().idxmax()])


def best_gain(summary: pd.DataFrame, at_least: float) -> Effect | None:
    """The largest speed-up over glibc beyond noise, if it is more than ``at_least``x."""
    if summary.empty:
        return None
    gains = summary[
        (summary["baseline"] == BASELINE) & summary["beyond_noise"] & (summary["factor"] > at_least)
    ]
    if gains.empty:
        return None
    return _effect(gains.loc[gains["factor"].idxmax()])


def _effect(row: pd.Series) -> Effect:
    return Effect(
        case=str(row["case"]),
        allocator=str(row["allocator"]),
        baseline=str(row["baseline"]),
        factor=float(row["factor"]),
        images_per_s=float(row["images_per_s"]),
        baseline_images_per_s=float(row["baseline_images_per_s"]),
        beyond_noise=bool(row["beyond_noise"]),
    )


def render_effect(rows: pd.DataFrame, label: str, what: str, filtered: bool) -> None:
    """The page's section: a chart per case measured under several allocators and a one-line
    caption with the largest effect; with one allocator, one line on how to get the comparison.
    ``what`` names a case in the caption (e.g. "reader"); ``filtered``: the Allocator filter is set.
    """
    names = allocators_of(rows)
    if len(names) < 2:
        if filtered:
            st.caption(
                f"Allocator effect: the sidebar's **Allocator** filter keeps {', '.join(names)} "
                "only; clear it to compare allocators."
            )
        elif names:
            st.caption(
                f"Allocator effect: every row here ran under {names[0]}; {SESSIONS_HINT} "
                "(glibc-tuned, jemalloc, tcmalloc) to compare allocators."
            )
        return
    summary = effects(rows, label)
    st.subheader("Allocator effect")
    if summary.empty:
        st.caption(
            f"These rows ran under {', '.join(names)}, but no {what} was measured under more than "
            f"one of them (with the same parameters): {SESSIONS_HINT}."
        )
        return
    effect = largest(summary)
    if effect is not None:
        st.caption(f"Largest effect: {effect.text()}.")
    tooltip: list[alt.Tooltip | str] = [
        alt.Tooltip("case:N", title=what),
        "allocator:N",
        alt.Tooltip("images_per_s:Q", title=IMAGES_PER_S, format=",.0f"),
        alt.Tooltip("ci_low:Q", title="95% CI low, images/s", format=",.0f"),
        alt.Tooltip("ci_high:Q", title="95% CI high, images/s", format=",.0f"),
        alt.Tooltip("factor:Q", title="× baseline", format=".2f"),
        alt.Tooltip("baseline:N", title="baseline"),
        alt.Tooltip(
            "page_faults_minor_per_image:Q", title="minor page faults per image", format=",.1f"
        ),
        alt.Tooltip(
            "page_faults_major_per_image:Q", title="major page faults per image", format=",.2f"
        ),
        alt.Tooltip("rounds:Q", title="timed rounds"),
    ]
    show(
        bars_with_interval(
            summary,
            "allocator",
            "images_per_s",
            "ci_low",
            "ci_high",
            IMAGES_PER_S,
            "allocator",
            tooltip=tooltip,
            row="case",
        )
    )
