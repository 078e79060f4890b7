"""Explorer: every row and column that passes the filters, searchable, downloadable."""

from __future__ import annotations

import pandas as pd
import streamlit as st
from dashboard.data import to_results_parquet
from dashboard.state import BENCH_HINT, View, current_view

from imgbench.results.schema import COLUMNS

DEFAULT_COLUMNS = [
    "run_id",
    "stage",
    "library",
    "variant",
    "codec",
    "mode",
    "cache_state",
    "threads",
    "workers",
    "batch_size",
    "images_per_s_median",
    "images_per_s_q1",
    "images_per_s_q3",
    "mb_per_s_median",
    "latency_ms_median",
    "peak_rss_bytes",
    "status",
    "reason",
    "case_id",
]
MAX_SHOWN = 20_000  # rows sent to the browser; downloads always hold every row


def search(frame: pd.DataFrame, text: str, statuses: list[str]) -> pd.DataFrame:
    if statuses:
        frame = frame[frame["status"].isin(statuses)]
    if text:
        haystack = (frame["case_id"].fillna("") + " " + frame["reason"].fillna("")).str.lower()
        frame = frame[haystack.str.contains(text.lower(), regex=False)]
    return frame


def render(view: View) -> None:
    st.title("Explorer")
    if view.frame.empty:
        st.info(
            f"No rows in the current filters. {BENCH_HINT.capitalize()} if the folder is empty."
        )
        return
    left, right = st.columns([2, 1])
    text = left.text_input(
        "Search case id or reason",
        key="explorer_search",
        placeholder="e.g. pillow, jpeg, cannot import",
    )
    statuses = right.multiselect(
        "Status", ["ok", "skipped", "failed"], key="explorer_status", placeholder="all"
    )
    columns = st.multiselect("Columns", COLUMNS, default=DEFAULT_COLUMNS, key="explorer_columns")
    rows = search(view.frame, text, statuses)
    st.caption(
        f"{len(rows):,} rows"
        + (f"; showing the first {MAX_SHOWN:,}" if len(rows) > MAX_SHOWN else "")
    )
    st.dataframe(rows[columns or DEFAULT_COLUMNS].head(MAX_SHOWN), hide_index=True)
    left, right = st.columns(2)
    left.download_button(
        "Download CSV",
        data=lambda: rows[COLUMNS].to_csv(index=False),
        file_name="imgbench-results.csv",
        mime="text/csv",
        icon=":material/download:",
    )
    right.download_button(
        "Download parquet",
        data=lambda: to_results_parquet(rows),
        file_name="imgbench-results.parquet",
        mime="application/vnd.apache.parquet",
        icon=":material/download:",
    )


render(current_view())
