"""Formats: read rate warm vs cold and sequential vs shuffled, write rate, and size on disk."""

from __future__ import annotations

import altair as alt
import pandas as pd
import streamlit as st
from dashboard.charts import IMAGES_PER_S, bar_x, bars_with_interval, show
from dashboard.data import is_storage_ceiling, with_json_keys
from dashboard.intervals import summarise
from dashboard.state import View, current_view, stage_rows

from imgbench.answer.disks import disk_tables, text_table

JSON_KEYS = [
    "order",
    "bytes_on_disk",
    "size_ratio",
    "write_images_per_s",
    "sync_share",
    "decode",
]


def prepare(rows: pd.DataFrame) -> pd.DataFrame:
    rows = with_json_keys(rows, JSON_KEYS)
    rows["order"] = rows["order"].fillna("sequential").astype(str)
    rows["cache_state"] = rows["cache_state"].fillna("n/a").astype(str)
    if "storage" in rows:  # reads from an S3 bucket: their own colour beside warm and cold
        rows.loc[rows["storage"].astype(str) == "s3", "cache_state"] = "s3"
    rows["format"] = rows["library"].astype(str) + " · " + rows["variant"].astype(str)
    return rows


def write_and_size(rows: pd.DataFrame) -> pd.DataFrame:
    """Per format: write images/s (extra_json or `write` rows), the share of a write spent in
    fsync (the disk's flush), bytes on disk and size ratio."""
    formats = rows[~is_storage_ceiling(rows)]
    writes = formats[formats["mode"].astype(str) == "write"]
    from_rows = writes.groupby("library")["images_per_s_median"].median()
    table = formats.groupby("library").agg(
        write_images_per_s=("write_images_per_s", lambda s: pd.to_numeric(s).median()),
        sync_share=("sync_share", lambda s: pd.to_numeric(s).median()),
        bytes_on_disk=("bytes_on_disk", lambda s: pd.to_numeric(s).median()),
        size_ratio=("size_ratio", lambda s: pd.to_numeric(s).median()),
    )
    table["write_images_per_s"] = table["write_images_per_s"].fillna(from_rows)
    table["mb_on_disk"] = table["bytes_on_disk"] / 1e6
    return table.reset_index()


def warm_cold(summary: pd.DataFrame) -> pd.DataFrame:
    """images/s warm and cold side by side, and how much a cold cache costs."""
    table = summary.pivot_table(
        index=["format", "order"], columns="cache_state", values="images_per_s", aggfunc="median"
    )
    if {"warm", "cold"} <= set(table.columns):
        table["cold / warm"] = table["cold"] / table["warm"]
    return table.reset_index()


def render(view: View) -> None:
    st.title("Formats")
    rows = prepare(stage_rows(view, "format", "storage format", "imgbench run -k format"))
    reads = rows[~rows["mode"].astype(str).isin(["write", "upload"])]

    st.subheader("Read rate: warm vs cold page cache vs S3, sequential vs shuffled")
    if reads.empty:
        st.info("No format read rows yet.")
    else:
        summary = summarise(reads, ["format", "library", "cache_state", "order"])
        tooltip: list[alt.Tooltip | str] = [
            "format:N",
            alt.Tooltip("cache_state:N", title="cache"),
            "order:N",
            alt.Tooltip("images_per_s:Q", title=IMAGES_PER_S, format=",.0f"),
            alt.Tooltip("ci_low:Q", title="95% CI low", format=",.0f"),
            alt.Tooltip("ci_high:Q", title="95% CI high", format=",.0f"),
            alt.Tooltip("mb_per_s:Q", title="MB/s", format=",.1f"),
        ]
        st.caption(
            "`raw-file` is a plain sequential read of one big file: the disk and page-cache "
            "ceiling for the other formats."
        )
        show(
            bars_with_interval(
                summary,
                "format",
                "images_per_s",
                "ci_low",
                "ci_high",
                f"read {IMAGES_PER_S}",
                "format · variant",
                color="cache_state",
                color_title="cache",
                tooltip=tooltip,
                row="order",
            )
        )
        st.dataframe(warm_cold(summary), hide_index=True)
        for disk in disk_tables(reads, stages=("format",)):
            st.caption(f"Read from **{disk.device}**: images/s beside iostat over the rounds")
            st.dataframe(text_table(disk.table), hide_index=True)

    st.subheader("Write rate and size on disk")
    sizes = write_and_size(rows)
    if sizes[["write_images_per_s", "bytes_on_disk"]].isna().all().all():
        st.info(
            "No write or size figures yet (extra_json `write_images_per_s`, "
            "`bytes_on_disk`, `size_ratio`)."
        )
        return
    left, right = st.columns(2)
    with left:
        data = sizes.dropna(subset=["write_images_per_s"])
        x_encoding, _ = bar_x(
            "write_images_per_s", f"write {IMAGES_PER_S}", data["write_images_per_s"]
        )
        show(
            alt.Chart(data)
            .mark_bar()
            .encode(
                **x_encoding,
                y=alt.Y("library:N", title="format", sort="-x"),
                tooltip=[
                    "library:N",
                    alt.Tooltip("write_images_per_s:Q", title="write images/s", format=",.0f"),
                    alt.Tooltip("sync_share:Q", title="share in fsync (disk flush)", format=".0%"),
                ],
            )
            .properties(height=alt.Step(22))
        )
    with right:
        data = sizes.dropna(subset=["bytes_on_disk"])
        show(
            alt.Chart(data)
            .mark_bar()
            .encode(
                x=alt.X("mb_on_disk:Q", title="size on disk, MB (10^6 bytes)"),
                y=alt.Y("library:N", title="format", sort="x"),
                color=alt.Color(
                    "size_ratio:Q", title="size / source", scale=alt.Scale(scheme="orangered")
                ),
                tooltip=[
                    "library:N",
                    alt.Tooltip("mb_on_disk:Q", title="MB on disk", format=",.1f"),
                    alt.Tooltip("size_ratio:Q", title="size / source files", format=".2f"),
                ],
            )
            .properties(height=alt.Step(22))
        )


render(current_view())
