"""Readers: images/s per library × codec × mode with 95% intervals, % of the native ceiling
(tjbench), reduced-size decode against full decode, each decoder's rank on one thread beside its
rank inside the loader, and the allocator's effect on decoding."""

from __future__ import annotations

import altair as alt
import pandas as pd
import streamlit as st
from dashboard.allocators import main_session, render_effect, set_aside_caption
from dashboard.charts import (
    IMAGES_PER_S,
    LABELS,
    bar_x,
    bars_with_interval,
    show,
)
from dashboard.data import with_json_keys
from dashboard.intervals import summarise
from dashboard.state import View, current_view, stage_rows

from imgbench.answer.decoders import SUPPLY_HINT, DecoderRanking, decoder_rankings

KEYS = ["reader", "library", "variant", "codec", "setting", "threads_label", "decode"]


def prepare(rows: pd.DataFrame) -> pd.DataFrame:
    rows = with_json_keys(rows, ["reduce"])
    rows["reader"] = rows["library"].astype(str) + " · " + rows["variant"].astype(str)
    cache = rows["cache_state"].fillna("n/a").astype(str)
    mode = rows["mode"].fillna("?").astype(str)
    rows["setting"] = mode.where(~cache.isin(["warm", "cold"]), mode + " " + cache)
    reduced = rows["variant"].astype(str).str.contains("reduced") | rows["reduce"].notna()
    rows["decode"] = reduced.map({True: "reduced", False: "full"})
    return rows


def threads_text(labels: pd.Series) -> pd.Series:
    return labels.map(lambda t: "1 thread" if t == "1" else f"{t} threads")


def native_ceiling(view: View) -> pd.DataFrame:
    """tjbench images/s per machine, codec and dataset fingerprint (ignores library filters)."""
    rows = view.without("library", "threads")
    rows = rows[(rows["stage"] == "native") & (rows["status"] == "ok")]
    return (
        rows.groupby(["machine_id", "codec", "dataset_fingerprint"], as_index=False)[
            "images_per_s_median"
        ]
        .median()
        .rename(columns={"images_per_s_median": "native_images_per_s"})
    )


def percent_of_native(rows: pd.DataFrame, native: pd.DataFrame) -> pd.DataFrame:
    """Each read row's images/s as a percentage of native on the same codec and data."""
    joined = rows.merge(native, on=["machine_id", "codec", "dataset_fingerprint"], how="inner")
    joined["percent_of_native"] = (
        100 * joined["images_per_s_median"] / joined["native_images_per_s"]
    )
    return (
        joined.groupby(["reader", "codec", "threads_label", "setting", "decode"], as_index=False)
        .agg(
            percent_of_native=("percent_of_native", "median"),
            images_per_s=("images_per_s_median", "median"),
            native_images_per_s=("native_images_per_s", "median"),
        )
        .sort_values("percent_of_native", ascending=False)
    )


def reduced_vs_full(summary: pd.DataFrame) -> pd.DataFrame:
    """For libraries with a reduced decode: its images/s next to their fastest full decode."""
    reduced = summary[summary["decode"] == "reduced"]
    full = summary[summary["decode"] == "full"]
    keys = ["library", "codec", "setting", "threads_label"]
    best_full = full.loc[full.groupby(keys)["images_per_s"].idxmax()] if not full.empty else full
    pairs = reduced.merge(
        best_full[[*keys, "variant", "images_per_s"]], on=keys, suffixes=("", "_full")
    )
    pairs["speedup"] = pairs["images_per_s"] / pairs["images_per_s_full"]
    return pairs


def render_rankings(view: View) -> list[DecoderRanking]:
    """The single-thread ranking and the in-loader ranking side by side, per machine and
    dataset, and where their order differs (imgbench.answer.decoders: the report's tables)."""
    st.subheader("One thread vs inside the loader")
    st.caption(
        "Left: JPEG decoded from memory on one thread (this page's rows). Right: the same "
        "decoders as the DataLoader's default pipeline (the decoder supply): best images/s over "
        "worker counts, and at each count. A decoder's place on one thread is not its place "
        "where it runs. Each figure has its 95% interval; 'tie' and 'within the noise': the "
        "interval of the ratio to the other decoder reaches 1.0."
    )
    rankings = decoder_rankings(view.without("library", "threads", "codec"))
    if not rankings:
        st.info(f"No loader ran two decoders or more on these runs: {SUPPLY_HINT}.")
    for ranking in rankings:
        if len(rankings) > 1:
            st.markdown(f"**{ranking.title}**")
        st.markdown(ranking.summary())
        left, right = st.columns(2)
        with left:
            st.caption("One thread, images/s (95% interval)")
            st.dataframe(ranking.single_text(), hide_index=True)
        with right:
            st.caption(
                f"Inside the loader ({ranking.loader}, {ranking.pipeline}, batch "
                f"{ranking.batch_size or '?'}), images/s (95% interval)"
            )
            st.dataframe(ranking.in_loader_text(), hide_index=True)
        lines = [
            f"- **{label}**: {ranking.difference_text(label)}" for label in ranking.differences
        ]
        if lines:
            st.markdown("Where the order differs:\n" + "\n".join(lines))
    return rankings


def render(view: View) -> None:
    st.title("Readers")
    st.caption(
        "Decode to a C-contiguous HxWx3 uint8 RGB array. Bars: median images/s; "
        "lines: 95% interval of the median over all timed rounds."
    )
    every = prepare(stage_rows(view, "read", "reader", "imgbench run -k read"))
    rows, aside = main_session(every)
    set_aside_caption(rows, aside)
    settings = sorted(rows["setting"].unique())
    setting = st.segmented_control("Mode", settings, default=settings[0], key="readers_mode")
    shown = rows[rows["setting"] == (setting or settings[0])]
    summary = summarise(shown, KEYS)
    tooltip: list[alt.Tooltip | str] = [
        "library:N",
        "variant:N",
        alt.Tooltip("library_version:N", title="version"),
        "codec:N",
        alt.Tooltip("setting:N", title="mode"),
        alt.Tooltip("threads_label:N", title="threads"),
        alt.Tooltip("images_per_s:Q", title=IMAGES_PER_S, format=",.0f"),
        alt.Tooltip("ci_low:Q", title="95% CI low, images/s", format=",.0f"),
        alt.Tooltip("ci_high:Q", title="95% CI high, images/s", format=",.0f"),
        alt.Tooltip("mb_per_s:Q", title="MB/s", format=",.1f"),
        alt.Tooltip("megapixels_per_s:Q", title="megapixels/s", format=",.1f"),
        alt.Tooltip("latency_ms_p50:Q", title="latency p50, ms", format=".3f"),
        alt.Tooltip("latency_ms_p99:Q", title="latency p99, ms", format=".3f"),
        alt.Tooltip("rounds:Q", title="timed rounds"),
    ]
    st.subheader("Throughput per library and codec")
    show(
        bars_with_interval(
            summary,
            "reader",
            "images_per_s",
            "ci_low",
            "ci_high",
            IMAGES_PER_S,
            "library · variant",
            color="threads_label",
            color_title="threads",
            tooltip=tooltip,
            row="codec",
        )
    )

    st.subheader("% of the native ceiling")
    native = native_ceiling(view)
    if native.empty:
        st.info(
            "No native ceiling rows (stage `native`, library `tjbench`) for these runs: "
            "`imgbench run -k native` measures libjpeg-turbo's tjbench on the same images."
        )
    else:
        percent = percent_of_native(shown, native)
        if percent.empty:
            st.info("The native rows are for other codecs or datasets than these readers.")
        else:
            percent["label"] = percent["reader"] + " · " + threads_text(percent["threads_label"])
            x_encoding, _ = bar_x(
                "percent_of_native", "% of native (tjbench)", percent["percent_of_native"]
            )
            bars = (
                alt.Chart(percent)
                .mark_bar()
                .encode(
                    **x_encoding,
                    y=alt.Y("label:N", title=None, axis=LABELS, sort="-x"),
                    color=alt.Color("codec:N"),
                    tooltip=[
                        "reader:N",
                        "codec:N",
                        alt.Tooltip("threads_label:N", title="threads"),
                        alt.Tooltip("percent_of_native:Q", title="% of native", format=".1f"),
                        alt.Tooltip("images_per_s:Q", title=IMAGES_PER_S, format=",.0f"),
                        alt.Tooltip(
                            "native_images_per_s:Q", title="native images/s", format=",.0f"
                        ),
                    ],
                )
            )
            rule = (
                alt.Chart(pd.DataFrame({"x": [100.0]}))
                .mark_rule(color="red", strokeDash=[4, 4])
                .encode(x="x:Q")
            )
            show(alt.layer(bars, rule).properties(height=alt.Step(22)))

    st.subheader("Reduced-size decode vs full decode")
    pairs = reduced_vs_full(summarise(rows[rows["setting"] == (setting or settings[0])], KEYS))
    if pairs.empty:
        st.info(
            "No reduced-decode rows yet (a `variant` containing `reduced`, or `reduce` in "
            "params_json): they come with the readers stage, `imgbench run -k reduced`."
        )
    else:
        long = pd.concat(
            [
                pairs.assign(decode="reduced", value=pairs["images_per_s"], how=pairs["variant"]),
                pairs.assign(
                    decode="full", value=pairs["images_per_s_full"], how=pairs["variant_full"]
                ),
            ]
        )
        long["label"] = (
            long["library"] + " · " + long["codec"] + " · " + threads_text(long["threads_label"])
        )
        x_encoding, _ = bar_x("value", IMAGES_PER_S, long["value"])
        chart = (
            alt.Chart(long)
            .mark_bar()
            .encode(
                **x_encoding,
                y=alt.Y("label:N", title=None, axis=LABELS),
                yOffset="decode:N",
                color=alt.Color("decode:N", title="decode"),
                tooltip=[
                    "library:N",
                    "how:N",
                    "decode:N",
                    alt.Tooltip("value:Q", title=IMAGES_PER_S, format=",.0f"),
                    alt.Tooltip("speedup:Q", title="reduced / full", format=".2f"),
                ],
            )
            .properties(height=alt.Step(16))
        )
        show(chart)

    render_rankings(view)

    every["case"] = (
        every["reader"]
        + " · "
        + every["codec"].fillna("?").astype(str)
        + " · "
        + every["setting"]
        + " · "
        + threads_text(every["threads_label"])
    )
    render_effect(every, "case", "reader", filtered=bool(view.selections.get("allocator")))

    st.subheader("Numbers")
    st.dataframe(
        summary.sort_values("images_per_s", ascending=False),
        hide_index=True,
        column_config={
            "images_per_s": st.column_config.NumberColumn(IMAGES_PER_S, format="%.0f"),
            "ci_low": st.column_config.NumberColumn("95% CI low", format="%.0f"),
            "ci_high": st.column_config.NumberColumn("95% CI high", format="%.0f"),
            "mb_per_s": st.column_config.NumberColumn("MB/s", format="%.1f"),
            "megapixels_per_s": st.column_config.NumberColumn("megapixels/s", format="%.1f"),
        },
    )


render(current_view())
