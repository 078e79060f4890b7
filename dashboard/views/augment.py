"""Augmentations: per-transform images/s by library (heatmap, disagreements flagged), and the
same pipelines in every library, per image and in batches, and the allocator's effect on them."""

from __future__ import annotations

import altair as alt
import pandas as pd
import streamlit as st
from dashboard.allocators import main_session, render_effect, set_aside_caption
from dashboard.charts import IMAGES_PER_S, bars_with_interval, scale_for, show
from dashboard.data import with_json_keys
from dashboard.intervals import summarise
from dashboard.state import View, current_view, stage_rows

JSON_KEYS = [
    "transform",
    "pipeline",
    "agrees",
    "max_abs_diff",
    "tolerance",
    "reference",
    # the augment stage's own names (src/imgbench/augment/cases.py)
    "agreement",
    "agreement_max_abs",
    "agreement_tolerance",
    "agreement_reference",
    "part",  # a task's part: crop-ocr's one-hot heads (src/imgbench/augment/cases.py)
]


def prepare(rows: pd.DataFrame) -> pd.DataFrame:
    rows = with_json_keys(rows, JSON_KEYS)
    rows["agrees"] = [
        agrees if agrees is not None else _agreement_flag(flag)
        for agrees, flag in zip(rows["agrees"], rows["agreement"], strict=True)
    ]
    for ours, theirs in (
        ("max_abs_diff", "agreement_max_abs"),
        ("tolerance", "agreement_tolerance"),
        ("reference", "agreement_reference"),
    ):
        rows[ours] = rows[ours].where(rows[ours].notna(), rows[theirs])
    rows["tolerance"] = rows["tolerance"].astype("string")
    rows["kind"] = rows["pipeline"].notna().map({True: "pipeline", False: "transform"})
    rows["name"] = rows["pipeline"].where(rows["pipeline"].notna(), rows["transform"])
    rows["name"] = rows["name"].where(rows["name"].notna(), rows["variant"]).astype(str)
    # segmentation and crop-ocr rows are their own kind: never in the transform heatmap
    task = rows["task"] if "task" in rows else pd.Series(None, index=rows.index, dtype="object")
    other = task.notna() & (task != "classification")
    part = rows["part"].fillna("").astype(str).map(lambda p: f" {p}" if p else "")
    rows.loc[other, "kind"] = "task"
    rows.loc[other, "name"] = task[other].astype(str) + part[other]
    batch = pd.to_numeric(rows["batch_size"], errors="coerce")
    suffix = batch.astype("Int64").astype(str).radd(" · batch ")
    rows["runner"] = rows["library"].astype(str) + suffix.where(batch.notna(), "")
    return rows


def _agreement_flag(flag: object) -> bool | None:
    """The stage's one-string verdict: "pass..." agrees, "flagged: ..." / "error: ..." does not."""
    if not isinstance(flag, str):
        return None
    if flag.startswith("pass"):
        return True
    return False if flag.startswith(("flagged", "error")) else None


def transform_table(rows: pd.DataFrame) -> pd.DataFrame:
    """Median images/s per transform × library, with the agreement flag of its rows."""
    transforms = rows[rows["kind"] == "transform"]
    if transforms.empty:
        return pd.DataFrame(columns=["name", "runner", "images_per_s", "agrees"])
    agg = transforms.groupby(["name", "runner"], as_index=False).agg(
        images_per_s=("images_per_s_median", "median"),
        agrees=("agrees", lambda s: None if s.isna().all() else bool(s.dropna().all())),
        max_abs_diff=("max_abs_diff", "max"),
        tolerance=("tolerance", "max"),
        reference=("reference", "first"),
        library_version=("library_version", "first"),
    )
    agg["flag"] = agg["agrees"].map({False: "≠"}).fillna("")
    return agg


def render(view: View) -> None:
    st.title("Augmentations")
    every = prepare(stage_rows(view, "augment", "augmentation", "imgbench run -k augment"))
    rows, aside = main_session(every)
    set_aside_caption(rows, aside)
    table = transform_table(rows)

    st.subheader("Per transform: images/s by library")
    if table.empty:
        st.info("No single-transform rows yet (only pipelines).")
    else:
        st.caption(
            "≠ marks a library whose output disagrees with the reference beyond tolerance: "
            "its speed is not a like-for-like comparison."
        )
        scale = scale_for(table["images_per_s"])
        if scale.to_dict().get("type") != "log":
            scale = alt.Scale(type="log")  # transforms differ by orders of magnitude by nature
        base = alt.Chart(table).encode(
            x=alt.X("runner:N", title="library"),
            y=alt.Y("name:N", title="transform"),
            tooltip=[
                alt.Tooltip("name:N", title="transform"),
                alt.Tooltip("runner:N", title="library"),
                alt.Tooltip("library_version:N", title="version"),
                alt.Tooltip("images_per_s:Q", title=IMAGES_PER_S, format=",.0f"),
                alt.Tooltip("agrees:N", title="agrees with reference"),
                alt.Tooltip("max_abs_diff:Q", title="max abs diff (levels)", format=".2f"),
                alt.Tooltip("tolerance:N", title="tolerance"),
                "reference:N",
            ],
        )
        heat = base.mark_rect().encode(
            color=alt.Color("images_per_s:Q", title=f"{IMAGES_PER_S}, log scale", scale=scale)
        )
        text = (
            base.mark_text(fontSize=11)
            .encode(
                text=alt.Text("label:N"),
            )
            .transform_calculate(label="format(datum.images_per_s, ',.0f') + ' ' + datum.flag")
        )
        show(alt.layer(heat, text).properties(height=alt.Step(26)))
        disagree = table[table["agrees"] == False]  # noqa: E712 (None = not checked)
        if not disagree.empty:
            st.warning(
                "Outputs disagree beyond tolerance: "
                + ", ".join(f"{r.runner} {r.name}" for r in disagree.itertuples())
            )

    tasks = rows[rows["kind"] == "task"]
    if not tasks.empty:
        st.subheader("Tasks beyond classification: segmentation, crop-ocr")
        st.caption("Each task is its own work: compare libraries within a task, never across.")
        summary = summarise(tasks, ["name", "runner", "agreement"])
        st.dataframe(summary, hide_index=True)

    st.subheader("Pipelines")
    pipelines = rows[rows["kind"] == "pipeline"]
    if pipelines.empty:
        st.info(
            "No pipeline rows yet (`pipeline` in params_json), e.g. "
            "`imgbench run -k train-classification`."
        )
    else:
        summary = summarise(pipelines, ["name", "runner", "library"])
        tooltip = [
            alt.Tooltip("name:N", title="pipeline"),
            alt.Tooltip("runner:N", title="library"),
            alt.Tooltip("images_per_s:Q", title=IMAGES_PER_S, format=",.0f"),
            alt.Tooltip("ci_low:Q", title="95% CI low", format=",.0f"),
            alt.Tooltip("ci_high:Q", title="95% CI high", format=",.0f"),
            alt.Tooltip("rounds:Q", title="timed rounds"),
        ]
        show(
            bars_with_interval(
                summary,
                "runner",
                "images_per_s",
                "ci_low",
                "ci_high",
                f"{IMAGES_PER_S} (per image, also in batch mode)",
                "library",
                tooltip=tooltip,
                row="name",
            )
        )
        st.dataframe(summary, hide_index=True)
    every["case"] = every["runner"] + " · " + every["name"]
    render_effect(every, "case", "augmentation", filtered=bool(view.selections.get("allocator")))


render(current_view())
