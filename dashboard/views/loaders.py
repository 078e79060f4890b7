"""Loaders: images/s vs workers, one chart per task (each system's best line and the common
default; every configuration behind a toggle), each system at its best against the answer's
pick, memory per worker over time, time per pipeline stage, accelerator utilisation (AU) with
time to first batch, and the allocator's effect."""

from __future__ import annotations

import altair as alt
import pandas as pd
import streamlit as st
from dashboard.allocators import main_session, render_effect, set_aside_caption
from dashboard.charts import (
    IMAGES_PER_S,
    LABELS,
    bar_x,
    scale_for,
    show,
    title_with_scale,
)
from dashboard.data import with_json_keys
from dashboard.intervals import rounded, summarise
from dashboard.state import View, current_view, stage_rows

from imgbench.answer.rows import CLASSIFICATION, Configuration, is_experiment, task_of, where
from imgbench.answer.systems import (
    AS_DOCUMENTED,
    SystemsTable,
    configured_as,
    figure_places,
    round_figure,
    system_of,
    systems_tables,
    tables_for,
)
from imgbench.report.systems import cited_rows, systems_markdown

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
EVERY_KEY = "loaders_every_configuration"  # the toggle: every line, not each system's best
BEST, DEFAULT, OTHER = "system's best", "common default", "other configuration"
TWO_COLUMNS = 60  # the legend takes two columns while its longest label has at most this many
PLOT_HEIGHT, LEGEND_ROW = 420, 32  # pixels: the chart without its legend, each legend row


def prepare(rows: pd.DataFrame) -> pd.DataFrame:
    rows = with_json_keys(rows, JSON_KEYS)
    records = rows.to_dict("records")
    rows["task"] = [task_of(r) for r in records]
    rows["system"] = [system_of(r) for r in records]  # older rows: the library
    rows["configured_as"] = [configured_as(r) for r in records]
    rows["common_default"] = [Configuration.of(r).is_common_default for r in records]
    batch = pd.to_numeric(rows["batch_size"], errors="coerce").astype("Int64").astype(str)
    documented = rows["configured_as"].eq(AS_DOCUMENTED)
    rows["pipeline"] = (
        rows["library"].astype(str)
        + " · "
        + rows["variant"].astype(str)
        + " · batch "
        + batch.fillna("?")
        + documented.map({True: " · as documented", False: ""})
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
    every_line = st.toggle(
        "Every configuration, not only each system's best",
        key=EVERY_KEY,
        help="Off: one line per system (DALI, tf.data, the DataLoader, ...) at its best "
        "configuration, and the common default. On: every loader, pipeline and batch size.",
    )
    st.caption(
        "One chart per task (classification, segmentation and crop-ocr are different work). "
        "Real loaders and pipelines only; the experiments (copy-on-access, AU emulation) have "
        "their own chart below. Bands and the table under each chart: the 95% interval of the "
        "median of the rounds; each system at its best: the answer's intervals (widened by the "
        "between-session spread). Figures are rounded to what their interval supports (at most "
        "three significant figures)."
    )
    tables = systems_tables(view.frame) if not rows.empty else []
    for task in tasks_in(rows):
        st.markdown(f"#### {task}")
        scaling_chart(rows[rows["task"] == task], task, every_line)
        render_systems(tables_for(tables, task))
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


def tasks_in(rows: pd.DataFrame) -> list[str]:
    """The tasks of ``rows``, classification first."""
    tasks = sorted(set(rows["task"])) if "task" in rows else []
    return sorted(tasks, key=lambda t: (t != CLASSIFICATION, t))


def line_roles(curve: pd.DataFrame, defaults: set[str]) -> pd.Series:
    """Per curve point: the system's best (its pipeline with the highest images/s of the
    system's), the common default, or another configuration."""
    peak = curve.groupby("pipeline")["images_per_s"].max()
    systems = curve.drop_duplicates("pipeline").set_index("pipeline")["system"]
    best = {str(peak[systems[systems == s].index].idxmax()) for s in systems.unique()}
    return pd.Series(
        [BEST if p in best else DEFAULT if p in defaults else OTHER for p in curve["pipeline"]],
        index=curve.index,
    )


def line_label(system: str, pipeline: str) -> str:
    """``DALI: dali · as-documented · batch 32``; the pipeline alone where the system is its
    library (rows from before the ``system`` column)."""
    library = pipeline.split(" · ", 1)[0]
    return pipeline if system == library else f"{system}: {pipeline}"


def scaling_chart(rows: pd.DataFrame, task: str, every_line: bool) -> None:
    """Images/s against workers for one task: each system's best line and the common default,
    or every line; then the best worker count of each line shown, as a table."""
    curve = summarise(rows, ["system", "pipeline", "workers_n"]).sort_values("workers_n")
    defaults = set(rows.loc[rows["common_default"].astype(bool), "pipeline"])
    curve["role"] = line_roles(curve, defaults)
    curve["task"] = task
    curve["line"] = [
        line_label(s, p) for s, p in zip(curve["system"], curve["pipeline"], strict=True)
    ]
    if not every_line:
        curve = curve[curve["role"] != OTHER]
    lines = list(curve["line"].unique())
    longest = max((len(str(label)) for label in lines), default=0)
    columns = 2 if longest <= TWO_COLUMNS else 1
    legend = alt.Legend(
        orient="bottom",
        direction="vertical",
        columns=columns,
        labelLimit=0,  # every label whole
        symbolLimit=0,
        title=None,
    )
    colours = alt.Scale(domain=lines, scheme="tableau10" if len(lines) <= 10 else "tableau20")
    scale = scale_for(pd.concat([curve["ci_low"], curve["ci_high"]]), zero=True)
    y_title = title_with_scale(f"{IMAGES_PER_S} (steady state)", scale)
    y = alt.Y("images_per_s:Q", title=y_title, scale=scale)
    base = alt.Chart(curve).encode(
        x=alt.X(
            "workers_n:Q", title="workers (processes or threads)", axis=alt.Axis(tickMinStep=1)
        ),
        color=alt.Color("line:N", legend=legend, scale=colours),
        tooltip=[
            alt.Tooltip("system:N", title="system"),
            "pipeline:N",
            alt.Tooltip("role:N", title="shown as"),
            alt.Tooltip("workers_n:Q", title="workers"),
            alt.Tooltip("images_per_s:Q", title=IMAGES_PER_S, format=",.3~r"),
            alt.Tooltip("ci_low:Q", title="95% CI low", format=",.3~r"),
            alt.Tooltip("ci_high:Q", title="95% CI high", format=",.3~r"),
        ],
    )
    band = base.mark_area(opacity=0.2).encode(
        y=alt.Y("ci_low:Q", scale=scale, title=y_title),
        y2="ci_high:Q",
        color=alt.Color("line:N", legend=None, scale=colours),  # the lines' legend only
    )
    title = f"{task}: " + (
        "every configuration" if every_line else "each system's best and the common default"
    )
    # the chart's height holds the legend below it (Streamlit fits the whole chart in it)
    height = PLOT_HEIGHT + LEGEND_ROW * -(-len(lines) // columns)
    show(
        alt.layer(band, base.mark_line(point=True).encode(y=y))
        .resolve_legend(color="independent")  # the lines' legend alone, not the bands'
        .properties(height=height, title=title)
    )
    st.dataframe(best_table(curve), hide_index=True)


def best_table(curve: pd.DataFrame) -> pd.DataFrame:
    """Each line's best worker count: images/s and its 95% interval rounded to what the
    interval supports, the speed-up over the line's 0 workers; no column that is empty."""
    if curve.empty:
        return pd.DataFrame()
    best = curve.loc[curve.groupby("line", sort=False)["images_per_s"].idxmax()]
    zero = curve[curve["workers_n"] == 0].set_index("line")["images_per_s"]
    speedup = best["images_per_s"].to_numpy() / zero.reindex(best["line"]).to_numpy(dtype=float)
    table = pd.DataFrame(
        {
            "system": best["system"].to_numpy(),
            "configuration": best["pipeline"].to_numpy(),
            "shown as": best["role"].to_numpy(),
            "workers (best)": best["workers_n"].to_numpy(),
            IMAGES_PER_S: best["images_per_s"].to_numpy(dtype=float),
            "95% low": best["ci_low"].to_numpy(dtype=float),
            "95% high": best["ci_high"].to_numpy(dtype=float),
            "× 0 workers": pd.array(
                [round_figure(x, figure_places(x)) for x in speedup], dtype="Float64"
            ),
        }
    )
    table = rounded(table, IMAGES_PER_S, "95% low", "95% high")
    table = table.sort_values(IMAGES_PER_S, ascending=False, kind="stable")
    return drop_empty_columns(table).reset_index(drop=True)


def drop_empty_columns(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` without the columns that hold nothing (all null)."""
    return table.loc[:, table.notna().any(axis=0)]


def render_systems(tables: list[SystemsTable]) -> None:
    """Each system at its best against the answer's pick (the report's table)."""
    for table in tables:
        st.markdown("\n".join(systems_markdown(table, heading="#####", rows=False)))
        with st.expander("The row behind each line"):
            st.markdown("\n".join(cited_rows(table)))


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
