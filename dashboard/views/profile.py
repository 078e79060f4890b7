"""Your pipeline (``imgbench profile``): the worker sweep of a user's own Dataset or DataLoader,
and where its time goes (py-spy samples attributed to read, decode, augment, collate/IPC, or
unattributed where the stacks cannot tell the step).
The Run filter does not apply: every profile run is listed, each with its run id."""

from __future__ import annotations

import altair as alt
import pandas as pd
import streamlit as st
from dashboard.charts import LABELS, show
from dashboard.data import with_json_keys
from dashboard.state import View, current_view

STAGE = "profile"
JSON_KEYS = [
    "time_to_first_batch_s",
    "au",
    "step_ms",
    "peak_pss_bytes",
    "worker_uss_bytes_mean",
    "uss_growth_bytes_per_min",
    "attribution",
    "user_setting",
    "failed_index",
]
CATEGORIES = {
    "read": "read",
    "decode": "decode",
    "augment": "augment",
    "collate": "collate/IPC",
    "unattributed": "unattributed",
    "other": "other",
}
HINT = "`imgbench profile MODULE:FACTORY --kw key=value` measures your own Dataset or DataLoader"


def workers_mean(growth: object) -> float | None:
    """Mean USS growth of a configuration's workers (``uss_growth_bytes_per_min`` by process)."""
    if not isinstance(growth, dict):
        return None
    slopes = [v for name, v in growth.items() if name != "main" and isinstance(v, int | float)]
    return sum(slopes) / len(slopes) if slopes else None


def sweep_table(rows: pd.DataFrame) -> pd.DataFrame:
    """One line per configuration: what the terminal's sweep table shows."""
    rows = with_json_keys(rows, JSON_KEYS)
    mib = 2**20
    return (
        pd.DataFrame(
            {
                "pipeline": rows["variant"],
                "run": rows["run_id"],
                "workers": pd.to_numeric(rows["workers"], errors="coerce").astype("Int64"),
                "yours": rows["user_setting"].fillna(False).astype(bool),
                "images/s": rows["images_per_s_median"].round(0),
                "first batch, s": pd.to_numeric(rows["time_to_first_batch_s"], errors="coerce"),
                "AU, %": pd.to_numeric(rows["au"], errors="coerce") * 100,
                "step, ms": pd.to_numeric(rows["step_ms"], errors="coerce"),
                "peak PSS, MiB": pd.to_numeric(rows["peak_pss_bytes"], errors="coerce") / mib,
                "worker USS, MiB": pd.to_numeric(rows["worker_uss_bytes_mean"], errors="coerce")
                / mib,
                "worker USS growth, MiB/min": rows["uss_growth_bytes_per_min"].map(workers_mean)
                / mib,
                "status": rows["status"],
                "reason": rows["reason"],
            }
        )
        .sort_values(["pipeline", "run", "workers"])
        .round(
            {
                "first batch, s": 2,
                "AU, %": 1,
                "peak PSS, MiB": 0,
                "worker USS, MiB": 0,
                "worker USS growth, MiB/min": 1,
            }
        )
    )


def attribution_long(rows: pd.DataFrame) -> pd.DataFrame:
    """extra_json attribution as one row per (pipeline, workers, category) with its share."""
    rows = with_json_keys(rows, ["attribution"])
    records = [
        {
            "config": f"{pipeline} · {int(workers)} workers",
            "category": CATEGORIES.get(category, category),
            "share": float(share),
        }
        for pipeline, workers, shares in zip(
            rows["variant"], rows["workers"], rows["attribution"], strict=True
        )
        if isinstance(shares, dict)
        for category, share in shares.items()
    ]
    return pd.DataFrame(records, columns=["config", "category", "share"])


def render(view: View) -> None:
    st.title("Your pipeline")
    every = view.without("run")  # every profile run, whichever run the sidebar preselected
    rows = every[every["stage"] == STAGE]
    if rows.empty:
        st.info(f"No profile rows yet: {HINT}.")
        return
    st.caption(
        "Each configuration ran the same pipeline with another worker count: a throughput "
        "phase, an AU phase with an emulated training step, and a phase sampled by py-spy."
    )
    st.dataframe(sweep_table(rows), hide_index=True)
    shares = attribution_long(rows[rows["status"] == "ok"])
    if shares.empty:
        st.info(
            "No stack samples in these rows (py-spy missing, `--sample-seconds 0`, or a tf.data "
            "pipeline: its map functions run in TensorFlow's C++ threads, which py-spy cannot see)."
        )
        return
    st.subheader("Where the time goes")
    chart = (
        alt.Chart(shares)
        .mark_bar()
        .encode(
            x=alt.X("share:Q", title="share of sampled working time", axis=alt.Axis(format="%")),
            y=alt.Y("config:N", title=None, axis=LABELS),
            color=alt.Color("category:N", sort=list(CATEGORIES.values())),
            order=alt.Order("category:N"),
            tooltip=["config:N", "category:N", alt.Tooltip("share:Q", format=".0%")],
        )
    )
    show(chart.properties(height=alt.Step(28)))
    st.caption(
        "Samples of blocked threads (waiting for a batch) are left out; the flame graph of a run "
        "is `results/RUN_ID.speedscope.json`."
    )


render(current_view())
