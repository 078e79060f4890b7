"""Compare: a baseline run against a candidate run, judged by ``imgbench.compare``.

The verdicts are those of ``imgbench compare`` on the same rows and settings (the page shows that
command); when it refuses the pair, the page shows its reason instead of a verdict.
"""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd
import streamlit as st
from dashboard.charts import LABELS, show
from dashboard.comparison import (
    Refusal,
    Settings,
    cached_compare,
    cli_command,
    machine_rows,
    metric_rows,
    page_config,
)
from dashboard.state import BENCH_HINT, View, current_view
from pandas.io.formats.style import Styler

from imgbench.compare.config import ConfigError, load_config
from imgbench.compare.report import PRIMARY_METRIC, counts, headline
from imgbench.compare.stats import IMPROVED, REGRESSED, UNCHANGED, ComparisonResult
from imgbench.results.schema import HIGHER_IS_BETTER

ADVISORY = "regressed (advisory)"
VERDICT_COLORS = {
    REGRESSED: "#d62728",
    IMPROVED: "#2ca02c",
    UNCHANGED: "#9e9e9e",
    ADVISORY: "#ff7f0e",
}
ALPHAS = (0.001, 0.01, 0.05, 0.1)
MAX_NAMED = 8  # regressed cases named in the headline; more are read from the table


def _style(table: pd.DataFrame) -> Styler:
    """Regressed rows red, improved green: the eye finds them before reading the verdicts."""
    shade = {REGRESSED: "background-color: #fde0dc", IMPROVED: "background-color: #e0f5e0"}

    def color(row: pd.Series) -> list[str]:
        return [shade.get(str(row["verdict"]), "")] * len(row)

    return table.style.apply(color, axis=1)


def ratio_chart(
    table: pd.DataFrame, metric: str, threshold: float
) -> alt.LayerChart | alt.FacetChart:
    """One dot per case on a log ratio axis, its CI if known, the default threshold band dashed."""
    shown = np.where(
        (table["verdict"] == REGRESSED) & ~table["gating"].astype(bool), ADVISORY, table["verdict"]
    )
    data = table.assign(label=table["case_id"], shown=shown)
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
            "shown:N",
            title="verdict",
            scale=alt.Scale(domain=list(VERDICT_COLORS), range=list(VERDICT_COLORS.values())),
        ),
        tooltip=[
            "case_id:N",
            "verdict:N",
            "method:N",
            alt.Tooltip("ratio:Q", format=".3f"),
            alt.Tooltip("ci_low:Q", title="95% CI low", format=".3f"),
            alt.Tooltip("ci_high:Q", title="95% CI high", format=".3f"),
            alt.Tooltip("baseline:Q", title=f"baseline {metric}", format=",.2f"),
            alt.Tooltip("candidate:Q", title=f"candidate {metric}", format=",.2f"),
            alt.Tooltip("p_worse_adjusted:Q", title="p worse, corrected", format=".2g"),
            alt.Tooltip("p_better_adjusted:Q", title="p better, corrected", format=".2g"),
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


def settings_caption(result: ComparisonResult) -> str:
    """How imgbench.compare decided, in a sentence (the report's settings, for the page)."""
    cfg = result.config
    rule = "the worse end of its CI" if cfg.decide_on == "ci" else "its ratio"
    correction = "Holm" if cfg.correction == "holm" else "Benjamini-Hochberg"
    return (
        f"A case regresses when a one-sided test (Mann-Whitney U on rounds; on run medians with "
        f"{cfg.min_runs}+ runs a side) is significant at alpha {cfg.alpha:g} after {correction} "
        f"correction and {rule} is past the threshold (default {cfg.threshold:.0%}; per-stage "
        f"rules apply). Advisory metrics never fail the check. Config: {cfg.source}."
    )


def show_result(result: ComparisonResult, metric: str) -> None:
    """The verdicts: the case counts and headline of ``imgbench compare``, then one metric."""
    tally = counts(result)
    line = headline(result)  # the last line `imgbench compare` prints
    if len(result.regressed_cases) > MAX_NAMED:  # a wall of names: the table lists them first
        line = (
            f"REGRESSION: {tally[REGRESSED]} regressed, {tally[IMPROVED]} improved, "
            f"{tally[UNCHANGED]} unchanged of {sum(tally.values())} cases; the table below "
            "lists the shown metric's regressions first"
        )
    (st.error if result.exit_code else st.success)(line)
    for warning in result.warnings:
        st.warning(warning)
    geomean = result.geomean().set_index("metric")["geomean_ratio"]
    cols = st.columns(5)
    cols[0].metric("Cases compared", sum(tally.values()))
    cols[1].metric("Regressed", tally[REGRESSED])
    cols[2].metric("Improved", tally[IMPROVED])
    cols[3].metric("Unchanged", tally[UNCHANGED])
    cols[4].metric(
        "Geometric mean ratio",
        f"{geomean[metric]:.3f}" if metric in geomean else "n/a",
        help=f"candidate / baseline of {metric}",
    )
    st.caption(settings_caption(result))
    table = metric_rows(result, metric)
    if table.empty:
        st.info(f"imgbench.compare has no `{metric}` values for these cases.")
        return
    direction = "higher" if HIGHER_IS_BETTER[metric] else "lower"
    st.subheader(f"`{metric}` per case ({direction} is better)")
    show(ratio_chart(table, metric, result.config.threshold))
    st.dataframe(_style(table), hide_index=True)
    left_out = {
        "only in the baseline": result.only_in_baseline,
        "only in the candidate": result.only_in_candidate,
        "ignored by the config": [f"{c}: {r}" for c, r in sorted(result.ignored.items())],
    }
    for what, cases in left_out.items():
        if cases:
            with st.expander(f"{len(cases)} cases {what} (not compared)"):
                st.write(cases)


def show_machines(result: ComparisonResult) -> None:
    """The runs' machines: per configuration, their ratio and how much of it the machine
    reference explains (`imgbench compare --machines`); nothing where a run carries none."""
    table = machine_rows(result)
    if table.empty or result.machines is None:
        return
    st.subheader("Machines: candidate / baseline")
    st.caption(
        "Each run timed a fixed decode-and-augment workload on one thread and on every core "
        "(its machine reference). A configuration's predicted ratio reads both references at "
        "its parallelism; explained = predicted / measured (docs/regression.md)."
    )
    for line in result.machines.summary():
        st.caption(line)
    if not result.machines.shown:
        st.caption(
            "Both runs ran at the same reference speed (within 10%): the differences below are "
            "not the machine's."
        )
    st.dataframe(
        table.style.format(
            {
                "baseline images/s": "{:,.0f}",
                "candidate images/s": "{:,.0f}",
                "machine ratio": "{:.3f}",
                "reference predicts": "{:.3f}",
                "reference explains": "{:.0%}",
            },
            na_rep="",
        ),
        hide_index=True,
        key="compare_machines",
    )


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
    try:
        defaults = load_config()
    except ConfigError as exc:  # `imgbench compare` exits 2 on it too
        st.error(f"imgbench compare cannot read its config: {exc}")
        return
    left, middle, right = st.columns(3)
    baseline = left.selectbox("Baseline run", runs, index=1, key="compare_baseline")
    candidate = middle.selectbox("Candidate run", runs, index=0, key="compare_candidate")
    metric = right.selectbox(
        "Metric shown",
        list(defaults.metrics),
        index=list(defaults.metrics).index(PRIMARY_METRIC)
        if PRIMARY_METRIC in defaults.metrics
        else 0,
        key="compare_metric",
        help="every metric is judged; the case counts above are over the gating ones",
    )
    left, middle, right = st.columns(3)
    threshold = left.slider(
        "Default threshold, %",
        1,
        50,
        round(defaults.threshold * 100),
        key="compare_threshold",
        help="`--threshold`; the config's per-stage rules still apply",
    )
    alphas = sorted({*ALPHAS, defaults.alpha})
    alpha = middle.select_slider(
        "Significance level, after correction",
        alphas,
        value=defaults.alpha,
        key="compare_alpha",
        help="`--alpha`",
    )
    cross = right.checkbox(
        "Compare across machines",
        key="compare_cross_machine",
        help="`--allow-cross-machine`: differences may then come from the hardware",
    )
    settings = Settings(threshold=threshold / 100, alpha=float(alpha), allow_cross_machine=cross)
    try:
        config = page_config(settings)
    except ConfigError as exc:
        st.error(f"imgbench compare refuses these settings: {exc}")
        return
    base = rows[rows["run_label"] == baseline]
    cand = rows[rows["run_label"] == candidate]
    run_ids = [str(side["run_id"].iloc[0]) for side in (base, cand)]
    filtered = any(chosen for name, chosen in view.selections.items() if name != "run")
    st.caption(
        "Same verdicts as `"
        + cli_command(run_ids[0], run_ids[1], view.results.folder, config, cross)
        + "`"
        + (" on the rows that pass the sidebar filters." if filtered else ".")
    )
    key = (
        str(view.results.folder),
        view.results.signature,
        baseline,
        candidate,
        tuple((name, tuple(chosen)) for name, chosen in view.selections.items() if name != "run"),
        repr(config),
    )
    outcome = cached_compare(base, cand, config, key, cross)
    if isinstance(outcome, Refusal):
        st.error(f"imgbench compare refuses to compare these runs: {outcome.reason}.")
        return
    show_result(outcome, metric)
    show_machines(outcome)


render(current_view())
