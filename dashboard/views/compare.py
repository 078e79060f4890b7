"""Compare: a baseline run against a candidate run, case by case, with significance."""

from __future__ import annotations

import math

import altair as alt
import numpy as np
import pandas as pd
import streamlit as st
from dashboard.charts import LABELS, show
from dashboard.state import BENCH_HINT, View, current_view
from dashboard.stats import Comparison, compare_runs

from imgbench.results.schema import HIGHER_IS_BETTER

VERDICT_COLORS = {
    "regressed": "#d62728",
    "improved": "#2ca02c",
    "unchanged": "#9e9e9e",
    "changed (untested)": "#ff7f0e",
    "no data": "#cccccc",
}


def mismatch_warnings(base: pd.DataFrame, cand: pd.DataFrame) -> list[str]:
    out = []
    for column, what in (("machine_id", "machines"), ("dataset_fingerprint", "datasets")):
        left = set(base[column].dropna().astype(str))
        right = set(cand[column].dropna().astype(str))
        if left != right:
            out.append(
                f"The runs were measured on different {what} ({', '.join(sorted(left)) or '?'} vs "
                f"{', '.join(sorted(right)) or '?'}): differences may come from that, not from "
                "the change."
            )
    return out


def geometric_mean(ratios: pd.Series) -> float:
    values = ratios[np.isfinite(ratios) & (ratios > 0)]
    return float(np.exp(np.log(values).mean())) if len(values) else math.nan


def _style(table: pd.DataFrame):  # type: ignore[no-untyped-def]
    def color(row: pd.Series) -> list[str]:
        shade = {"regressed": "background-color: #fde0dc", "improved": "background-color: #e0f5e0"}
        return [shade.get(row["verdict"], "")] * len(row)

    return table.style.apply(color, axis=1)


@st.cache_data(max_entries=32, show_spinner="Comparing the runs…")
def cached_comparison(
    _base: pd.DataFrame,
    _cand: pd.DataFrame,
    key: tuple,
    metric: str,
    threshold: float,
    alpha: float,
) -> Comparison:
    """The bootstrap takes seconds: computed once per (runs, filters, files, settings) ``key``."""
    return compare_runs(_base, _cand, metric=metric, threshold=threshold, alpha=alpha)


def ratio_chart(table: pd.DataFrame, metric: str, threshold: float) -> alt.LayerChart:
    """One dot per case on a log ratio axis, its 95% CI if known, the threshold band dashed."""
    data = table.assign(label=table["case_id"])
    if "ci_low" not in data:
        data = data.assign(ci_low=np.nan, ci_high=np.nan)
    bounds = [1.0 / (1.0 + threshold), 1.0, 1.0 + threshold]
    values = pd.concat([data["ratio"], data["ci_low"], data["ci_high"], pd.Series(bounds)])
    values = values[np.isfinite(values) & (values > 0)]
    scale = alt.Scale(type="log", domain=[values.min() * 0.97, values.max() * 1.03], nice=False)
    x_title = f"candidate / baseline of {metric} (ratio, log scale)"
    base = alt.Chart(data).encode(
        y=alt.Y("label:N", title=None, axis=LABELS, sort=alt.EncodingSortField("ratio")),
    )
    points = base.mark_point(filled=True, size=70).encode(
        x=alt.X("ratio:Q", title=x_title, scale=scale),
        color=alt.Color(
            "verdict:N",
            scale=alt.Scale(domain=list(VERDICT_COLORS), range=list(VERDICT_COLORS.values())),
        ),
        tooltip=[
            "case_id:N",
            "verdict:N",
            alt.Tooltip("ratio:Q", format=".3f"),
            alt.Tooltip("ci_low:Q", title="95% CI low", format=".3f"),
            alt.Tooltip("ci_high:Q", title="95% CI high", format=".3f"),
            alt.Tooltip("baseline:Q", title=f"baseline {metric}", format=",.2f"),
            alt.Tooltip("candidate:Q", title=f"candidate {metric}", format=",.2f"),
            alt.Tooltip("p_value:Q", title="p (Mann-Whitney U)", format=".2g"),
            alt.Tooltip("p_holm:Q", title="p, corrected", format=".2g"),
        ],
    )
    intervals = (
        base.transform_filter("isValid(datum.ci_low) && datum.ci_low > 0")
        .mark_rule(color="#555")
        .encode(x=alt.X("ci_low:Q", scale=scale, title=x_title), x2="ci_high:Q")
    )
    rules = alt.Chart(pd.DataFrame({"x": bounds})).mark_rule(strokeDash=[4, 4], opacity=0.6)
    rules = rules.encode(x=alt.X("x:Q", scale=scale, title=x_title))
    return alt.layer(rules, intervals, points).properties(height=alt.Step(16))


def render(view: View) -> None:
    st.title("Compare")
    rows = view.without("run")
    runs = (
        rows.groupby("run_label")["created_utc"].min().sort_values(ascending=False).index.tolist()
    )
    if len(runs) < 2:
        st.info(
            f"Comparing needs two runs; found {len(runs)} in the current filters. "
            f"{BENCH_HINT.capitalize()} again (e.g. after a change) to get a second one."
        )
        return
    left, middle, right = st.columns(3)
    baseline = left.selectbox("Baseline run", runs, index=1, key="compare_baseline")
    candidate = middle.selectbox("Candidate run", runs, index=0, key="compare_candidate")
    metric = right.selectbox(
        "Metric",
        list(HIGHER_IS_BETTER),
        key="compare_metric",
        help="direction from imgbench.results.schema.HIGHER_IS_BETTER",
    )
    left, right = st.columns(2)
    threshold = left.slider("Practical threshold, %", 1, 50, 10, key="compare_threshold") / 100
    alpha = right.select_slider(
        "Significance level (Holm-corrected)",
        [0.001, 0.01, 0.05, 0.1],
        value=0.05,
        key="compare_alpha",
    )
    base = rows[rows["run_label"] == baseline]
    cand = rows[rows["run_label"] == candidate]
    for warning in mismatch_warnings(base, cand):
        st.warning(warning)
    key = (
        str(view.results.folder),
        view.results.signature,
        baseline,
        candidate,
        tuple((name, tuple(chosen)) for name, chosen in view.selections.items() if name != "run"),
    )
    comparison = cached_comparison(base, cand, key, metric, threshold, alpha)
    for warning in comparison.warnings:
        st.warning(warning)
    table, method = comparison.table, comparison.method
    if table.empty:
        st.info("The two runs have no ok case in common (same `case_id`).")
        return
    counts = table["verdict"].value_counts()
    cols = st.columns(5)
    cols[0].metric("Common cases", len(table))
    cols[1].metric("Regressed", int(counts.get("regressed", 0)))
    cols[2].metric("Improved", int(counts.get("improved", 0)))
    cols[3].metric("Unchanged", int(counts.get("unchanged", 0)))
    cols[4].metric("Geometric mean ratio", f"{geometric_mean(table['ratio']):.3f}")
    st.caption(
        f"Ratio = candidate / baseline of `{metric}` "
        f"({'higher' if HIGHER_IS_BETTER[metric] else 'lower'} is better). A case "
        f"regresses or improves only if significant (p < {alpha} after Holm) and beyond "
        f"{threshold:.0%}. Statistics: {method}."
    )

    show(ratio_chart(table, metric, threshold))
    ordered = table.sort_values("ratio")
    st.dataframe(_style(ordered), hide_index=True)
    only = sorted(set(base["case_id"]) ^ set(cand["case_id"]))
    if only:
        with st.expander(f"{len(only)} cases in only one of the runs"):
            st.write(only)


render(current_view())
