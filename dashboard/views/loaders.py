"""Loaders: images/s vs workers, memory per worker over time, time per pipeline stage,
accelerator utilisation (AU) with time to first batch, and the allocator's effect."""

from __future__ import annotations

import altair as alt
import pandas as pd
import streamlit as st
from dashboard.allocators import main_session, render_effect, set_aside_caption
from dashboard.charts import (
    IMAGES_PER_S,
    LABELS,
    LEGEND,
    bar_x,
    scale_for,
    show,
    title_with_scale,
)
from dashboard.data import with_json_keys
from dashboard.intervals import summarise
from dashboard.state import View, current_view, stage_rows

from imgbench.answer.rows import is_experiment, where

JSON_KEYS = ["time_to_first_batch_s", "stage_times_s", "au", "memory_timeline", "rss_timeline"]
# the experiments (copy-on-access, AU emulation) are told apart by imgbench.answer's rule
MEMORY_KINDS = {"PSS": "pss_bytes", "USS": "uss_bytes", "RSS": "rss_bytes"}
AU_TARGET = 90.0
PART_ORDER = [
    "read",
    "decode",
    "augment",
    "collate",
]  # MLPerf Storage: a configuration passes at AU >= 90%


def prepare(rows: pd.DataFrame) -> pd.DataFrame:
    rows = with_json_keys(rows, JSON_KEYS)
    batch = pd.to_numeric(rows["batch_size"], errors="coerce").astype("Int64").astype(str)
    rows["pipeline"] = (
        rows["library"].astype(str)
        + " · "
        + rows["variant"].astype(str)
        + " · batch "
        + batch.fillna("?")
    )
    workers = pd.to_numeric(rows["workers"], errors="coerce")
    rows["workers_n"] = workers.fillna(0).astype(int)
    rows["config"] = rows["pipeline"] + " · " + rows["workers_n"].astype(str) + " workers"
    return rows


def memory_long(rows: pd.DataFrame) -> pd.DataFrame:
    """extra_json memory_timeline (RSS, PSS, USS every few seconds) and rss_timeline (RSS
    alone, often) as one row per (config, sample time, process)."""
    records = [
        {
            "config": config,
            "t_s": sample.get("t_s"),
            "process": sample.get("process", "?"),
            **{kind: sample.get(key) for kind, key in MEMORY_KINDS.items()},
        }
        for column in ("memory_timeline", "rss_timeline")
        if column in rows
        for config, timeline in zip(rows["config"], rows[column], strict=True)
        if isinstance(timeline, list)
        for sample in timeline
        if isinstance(sample, dict)
    ]
    frame = pd.DataFrame(records, columns=["config", "t_s", "process", *MEMORY_KINDS])
    return frame.sort_values(["config", "process", "t_s"], kind="stable")


def stage_breakdown(rows: pd.DataFrame) -> pd.DataFrame:
    """extra_json stage_times_s as ms per image per (config, stage)."""
    records = [
        {"config": config, "part": part, "ms_per_image": 1e3 * float(value)}
        for config, times in zip(rows["config"], rows["stage_times_s"], strict=True)
        if isinstance(times, dict)
        for part, value in times.items()
        if isinstance(value, int | float)
    ]
    frame = pd.DataFrame(records, columns=["config", "part", "ms_per_image"])
    frame = frame.groupby(["config", "part"], as_index=False)["ms_per_image"].median()
    known = {part: index for index, part in enumerate(PART_ORDER)}
    frame["part_index"] = frame["part"].map(known).fillna(len(PART_ORDER))
    return frame


def render(view: View) -> None:
    st.title("Loaders")
    every = prepare(stage_rows(view, "loader", "loader", "imgbench run -k loader"))
    rows, aside = main_session(every)
    set_aside_caption(rows, aside)
    experiment = where(rows, is_experiment) if not rows.empty else pd.Series(dtype=bool)
    experiments, rows = rows[experiment], rows[~experiment]

    st.subheader("Scaling with workers")
    st.caption(
        "Real loaders and pipelines only; the experiments (copy-on-access, AU emulation) have "
        "their own chart below."
    )
    scaling_chart(rows)
    if not experiments.empty:
        st.subheader("Experiments (not pipelines)")
        st.caption(
            "These measure something other than a training pipeline: the copy-on-access "
            "experiment reads list entries without decoding; AU emulation paces the loader with "
            "an emulated accelerator, so its rate is the accelerator's. Never compare them with "
            "the loaders above."
        )
        experiment_chart(experiments)
    memory_section(pd.concat([rows, experiments]))
    breakdown_and_au(rows, experiments)
    render_effect(
        every, "config", "loader configuration", filtered=bool(view.selections.get("allocator"))
    )


def experiment_chart(experiments: pd.DataFrame) -> None:
    curve = summarise(experiments, ["pipeline", "workers_n"]).sort_values("workers_n")
    x_encoding, _ = bar_x(
        "images_per_s", f"{IMAGES_PER_S} (what the experiment counts)", curve["images_per_s"]
    )
    show(
        alt.Chart(
            curve.assign(
                label=curve["pipeline"] + " · " + curve["workers_n"].astype(str) + " workers"
            )
        )
        .mark_bar()
        .encode(
            **x_encoding,
            y=alt.Y("label:N", title=None, axis=LABELS),
            tooltip=[
                "pipeline:N",
                alt.Tooltip("workers_n:Q", title="workers"),
                alt.Tooltip("images_per_s:Q", title=IMAGES_PER_S, format=",.0f"),
            ],
        )
        .properties(height=alt.Step(24))
    )


def scaling_chart(rows: pd.DataFrame) -> None:
    curve = summarise(rows, ["pipeline", "workers_n"]).sort_values("workers_n")
    scale = scale_for(pd.concat([curve["ci_low"], curve["ci_high"]]), zero=True)
    y_title = title_with_scale(f"{IMAGES_PER_S} (steady state)", scale)
    y = alt.Y("images_per_s:Q", title=y_title, scale=scale)
    base = alt.Chart(curve).encode(
        x=alt.X(
            "workers_n:Q", title="workers (processes or threads)", axis=alt.Axis(tickMinStep=1)
        ),
        color=alt.Color("pipeline:N", title="loader · pipeline", legend=LEGEND),
        tooltip=[
            "pipeline:N",
            alt.Tooltip("workers_n:Q", title="workers"),
            alt.Tooltip("images_per_s:Q", title=IMAGES_PER_S, format=",.0f"),
            alt.Tooltip("ci_low:Q", title="95% CI low", format=",.0f"),
            alt.Tooltip("ci_high:Q", title="95% CI high", format=",.0f"),
        ],
    )
    band = base.mark_area(opacity=0.2).encode(
        y=alt.Y("ci_low:Q", scale=scale, title=y_title), y2="ci_high:Q"
    )
    show(alt.layer(band, base.mark_line(point=True).encode(y=y)).properties(height=320))
    zero = curve[curve["workers_n"] == 0].set_index("pipeline")["images_per_s"]
    best = curve.loc[curve.groupby("pipeline")["images_per_s"].idxmax()].set_index("pipeline")
    if not zero.empty:
        best = best.assign(speedup_vs_0_workers=best["images_per_s"] / zero.reindex(best.index))
    st.dataframe(
        best[
            ["workers_n", "images_per_s", "speedup_vs_0_workers"]
            if "speedup_vs_0_workers" in best
            else ["workers_n", "images_per_s"]
        ]
    )


def memory_section(rows: pd.DataFrame) -> None:
    st.subheader("Memory per process over time")
    memory = memory_long(rows)
    if memory.empty:
        st.info(
            "No memory samples yet (extra_json `memory_timeline`: a list of "
            "{t_s, process, rss_bytes, pss_bytes, uss_bytes})."
        )
    else:
        left, right = st.columns([3, 1])
        kind = right.radio(
            "Memory",
            list(MEMORY_KINDS),
            key="loaders_memory_kind",
            help="PSS shares pages fairly between processes; USS is private to "
            "one process (what copy-on-access grows); RSS counts shared "
            "pages in full.",
        )
        configs = sorted(memory["config"].unique())
        config = right.selectbox(
            "Configuration", configs, index=len(configs) - 1, key="loaders_memory_config"
        )
        shown = memory[memory["config"] == config].dropna(subset=[kind])
        shown = shown.assign(mb=pd.to_numeric(shown[kind]) / 1e6)
        with left:
            show(
                alt.Chart(shown)
                .mark_line(point=True)
                .encode(
                    x=alt.X("t_s:Q", title="time since start, s"),
                    y=alt.Y("mb:Q", title=f"{kind}, MB (10^6 bytes)"),
                    color=alt.Color("process:N", title="process"),
                    tooltip=[
                        "process:N",
                        alt.Tooltip("t_s:Q", title="t, s"),
                        alt.Tooltip("mb:Q", title=f"{kind}, MB", format=",.1f"),
                    ],
                )
                .properties(height=300)
            )
        sampling = shown_sampling(rows, config)
        if sampling:
            st.caption(sampling)


def shown_sampling(rows: pd.DataFrame, config: str) -> str | None:
    """How often memory was sampled for ``config``, and what each clock cost (from its row)."""
    keys = [
        "memory_interval_s",
        "memory_sampling_s",
        "memory_light_interval_s",
        "memory_light_sampling_s",
    ]
    chosen = with_json_keys(rows[rows["config"] == config], keys)
    if chosen.empty:
        return None
    row = chosen.iloc[-1]
    interval, cost = row.get("memory_interval_s"), row.get("memory_sampling_s")
    light, light_cost = row.get("memory_light_interval_s"), row.get("memory_light_sampling_s")
    if not isinstance(interval, int | float):
        return None
    text = f"PSS, USS and RSS sampled every {interval:g} s"
    if isinstance(cost, int | float):
        text += f" (cost {cost:.3f} s reading smaps_rollup)"
    if isinstance(light, int | float) and light == light:
        text += f"; RSS alone every {light:g} s"
        if isinstance(light_cost, int | float):
            text += f" (cost {light_cost:.3f} s reading statm)"
    return text + "; both costs are recorded in the row."


def breakdown_and_au(rows: pd.DataFrame, experiments: pd.DataFrame) -> None:
    st.subheader("Time per pipeline stage")
    parts = stage_breakdown(rows)
    if parts.empty:
        st.info(
            "No stage times yet (extra_json `stage_times_s`: {read, decode, augment, "
            "collate} seconds per image)."
        )
    else:
        show(
            alt.Chart(parts)
            .mark_bar()
            .encode(
                x=alt.X("ms_per_image:Q", title="ms per image", stack="zero"),
                y=alt.Y("config:N", title=None, axis=LABELS),
                color=alt.Color(
                    "part:N", title="stage", sort=PART_ORDER, scale=alt.Scale(scheme="tableau10")
                ),
                order=alt.Order("part_index:Q"),
                tooltip=[
                    "config:N",
                    alt.Tooltip("part:N", title="stage"),
                    alt.Tooltip("ms_per_image:Q", title="ms per image", format=".3f"),
                ],
            )
            .properties(height=alt.Step(24))
        )

    st.subheader("Accelerator utilisation and time to first batch")
    au = (
        pd.concat([rows, experiments])
        .dropna(subset=["au"])
        .assign(
            au_percent=lambda f: 100 * pd.to_numeric(f["au"]),
            ttfb_s=lambda f: pd.to_numeric(f["time_to_first_batch_s"]),
        )
    )
    if au.empty:
        st.info("No AU figures yet (extra_json `au`, 0–1, and `time_to_first_batch_s`).")
    else:
        au_chart(au)


def au_chart(au: pd.DataFrame) -> None:
    """AU % per configuration against the MLPerf pass mark."""
    medians = au.groupby("config", as_index=False)[
        ["au_percent", "ttfb_s", "images_per_s_median"]
    ].median()
    bars = (
        alt.Chart(medians)
        .mark_bar()
        .encode(
            x=alt.X(
                "au_percent:Q",
                title="accelerator utilisation AU, %",
                scale=alt.Scale(domain=[0, 100]),
            ),
            y=alt.Y("config:N", title=None, axis=LABELS, sort="-x"),
            color=alt.condition(
                alt.datum.au_percent >= AU_TARGET, alt.value("#2ca02c"), alt.value("#d62728")
            ),
            tooltip=[
                "config:N",
                alt.Tooltip("au_percent:Q", title="AU, %", format=".1f"),
                alt.Tooltip("ttfb_s:Q", title="time to first batch, s", format=".2f"),
                alt.Tooltip("images_per_s_median:Q", title=IMAGES_PER_S, format=",.0f"),
            ],
        )
    )
    rule = alt.Chart(pd.DataFrame({"x": [AU_TARGET]})).mark_rule(strokeDash=[4, 4]).encode(x="x:Q")
    show(alt.layer(bars, rule).properties(height=alt.Step(24)))
    st.caption(
        f"Green: AU ≥ {AU_TARGET:.0f}% (MLPerf Storage's pass mark) under the emulated "
        "compute time per batch."
    )


render(current_view())
