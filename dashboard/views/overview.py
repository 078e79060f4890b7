"""Overview: which runs, machines and datasets there are, the best configuration per stage,
which stage bounds the pipeline, and the allocator that pays (if one does)."""

from __future__ import annotations

import altair as alt
import pandas as pd
import streamlit as st
from dashboard.allocators import best_gain, case_label, effects
from dashboard.charts import IMAGES_PER_S, bar_x, show
from dashboard.data import is_storage_ceiling, with_json_keys
from dashboard.state import BENCH_HINT, View, current_view

from imgbench.results.store import run_summary

STAGE_TITLES = {
    "format": "storage read",
    "read": "decode",
    "augment": "augmentation",
    "loader": "loader (end to end)",
    "native": "native ceiling",
}
PIPELINE_STEPS = ("format", "read", "augment")  # what one image goes through, in order
ALLOCATOR_PAYS = 1.10  # the Overview names an allocator that beats glibc by more than this


def best_per_stage(ok: pd.DataFrame) -> pd.DataFrame:
    """The fastest ok row of each stage (format: read rows only, not writes)."""
    rows = ok[ok["images_per_s_median"].notna() & (ok["mode"].astype(str) != "write")]
    rows = rows[~is_storage_ceiling(rows)]  # the ceiling, not a choice
    if rows.empty:
        return pd.DataFrame(columns=["stage", "step", "library", "variant", "images_per_s"])
    best = rows.loc[rows.groupby("stage")["images_per_s_median"].idxmax()]
    table = pd.DataFrame(
        {
            "stage": best["stage"].to_numpy(),
            "step": best["stage"].map(STAGE_TITLES).fillna(best["stage"]).to_numpy(),
            "library": best["library"].to_numpy(),
            "variant": best["variant"].to_numpy(),
            "threads": best["threads_label"].to_numpy(),
            "allocator": best["allocator"].to_numpy(),
            "workers": best["workers"].to_numpy(),
            "params": best["params_json"].to_numpy(),
            "images_per_s": best["images_per_s_median"].to_numpy(),
            "case_id": best["case_id"].to_numpy(),
        }
    )
    return table.sort_values("images_per_s").reset_index(drop=True)


def bottleneck_text(best: pd.DataFrame) -> str | None:
    steps = best[best["stage"].isin(PIPELINE_STEPS)]
    if steps.empty:
        return None
    slowest = steps.iloc[0]
    text = (
        f"**Bottleneck: {slowest['step']}.** Its best configuration here "
        f"({slowest['library']} · {slowest['variant']}) does {slowest['images_per_s']:,.0f} "
        "images/s, the lowest of the per-image steps, so it bounds what one core feeds."
    )
    if len(steps) > 1:
        others = ", ".join(f"{r.step} {r.images_per_s:,.0f}" for r in steps.iloc[1:].itertuples())
        text += f" Others at their best: {others} images/s."
    return text


def allocator_text(ok: pd.DataFrame) -> str | None:
    """The allocator's largest gain over glibc on one case, when it is beyond noise and >10%."""
    if ok["allocator"].nunique() < 2:
        return None
    step = ok["stage"].map(STAGE_TITLES).fillna(ok["stage"])
    rows = ok.assign(case=case_label(ok) + " (" + step + ")")
    effect = best_gain(effects(rows, "case"), ALLOCATOR_PAYS)
    if effect is None:
        return None
    return (
        f"**Allocator: {effect.allocator} pays.** {effect.text()}. The stage's page compares "
        "every allocator measured."
    )


def loader_stage_shares(ok: pd.DataFrame) -> pd.DataFrame:
    """Mean share of time per pipeline stage inside the loaders (extra_json stage_times_s)."""
    loaders = with_json_keys(ok[ok["stage"] == "loader"], ["stage_times_s"])
    records = [
        {"part": part, "seconds_per_image": float(value)}
        for times in loaders["stage_times_s"]
        if isinstance(times, dict)
        for part, value in times.items()
        if isinstance(value, int | float)
    ]
    if not records:
        return pd.DataFrame(columns=["part", "seconds_per_image"])
    return pd.DataFrame(records).groupby("part", as_index=False)["seconds_per_image"].mean()


def render(view: View) -> None:
    st.title("Overview")
    frame = view.frame
    if view.results.empty:
        st.subheader("No results yet")
        st.markdown(
            f"{BENCH_HINT.capitalize()}. `make bench` sets everything up, measures the default "
            "matrix and writes `results/<run>.parquet`; this page then shows the runs, the best "
            "configuration of each stage and the bottleneck."
        )
        return
    counts = frame["status"].value_counts()
    cols = st.columns(6)
    cols[0].metric("Runs", frame["run_id"].nunique())
    cols[1].metric("Machines", frame["machine_id"].nunique())
    cols[2].metric("Datasets", frame["dataset_fingerprint"].nunique())
    cols[3].metric("Ok cases", int(counts.get("ok", 0)))
    cols[4].metric("Skipped", int(counts.get("skipped", 0)))
    cols[5].metric("Failed", int(counts.get("failed", 0)))

    st.subheader("Best configuration per stage")
    best = best_per_stage(view.ok())
    if best.empty:
        st.info(f"No measured rows in the current filters: {BENCH_HINT}.")
    else:
        text = bottleneck_text(best)
        if text:
            st.markdown(text)
        allocator = allocator_text(view.ok())
        if allocator:
            st.markdown(allocator)
        x_encoding, _ = bar_x("images_per_s", f"best {IMAGES_PER_S}", best["images_per_s"])
        chart = (
            alt.Chart(best)
            .mark_bar()
            .encode(
                **x_encoding,
                y=alt.Y("step:N", title="stage", sort="x"),
                color=alt.Color("stage:N", legend=None),
                tooltip=[
                    alt.Tooltip("step:N", title="stage"),
                    "library:N",
                    "variant:N",
                    "threads:N",
                    "params:N",
                    alt.Tooltip("images_per_s:Q", title=IMAGES_PER_S, format=",.0f"),
                ],
            )
            .properties(height=alt.Step(28))
        )
        show(chart)
        st.dataframe(
            best.drop(columns=["stage"]),
            hide_index=True,
            column_config={
                "images_per_s": st.column_config.NumberColumn(IMAGES_PER_S, format="%.0f")
            },
        )
    shares = loader_stage_shares(view.ok())
    if not shares.empty:
        st.subheader("Where a loader's time goes")
        shares = shares.assign(ms_per_image=shares["seconds_per_image"] * 1e3)
        chart = (
            alt.Chart(shares)
            .mark_bar()
            .encode(
                x=alt.X("ms_per_image:Q", title="ms per image (mean over loader rows)"),
                y=alt.Y("part:N", title="pipeline stage", sort="-x"),
                tooltip=["part:N", alt.Tooltip("ms_per_image:Q", format=".3f", title="ms/image")],
            )
        )
        show(chart)

    st.subheader("Runs")
    st.caption("Every run in the folder that passes the filters other than Run.")
    st.dataframe(run_summary(view.without("run")), hide_index=True)
    problems = frame[frame["status"] != "ok"]
    if not problems.empty:
        st.subheader("Skipped and failed cases")
        reasons = (
            problems.groupby(["status", "stage", "reason"], dropna=False)
            .size()
            .rename("cases")
            .reset_index()
            .sort_values("cases", ascending=False)
        )
        st.dataframe(reasons, hide_index=True)


render(current_view())
