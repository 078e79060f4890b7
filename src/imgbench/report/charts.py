"""The answer's charts (Altair), drawn the same on the dashboard's Overview and in the report.

Altair is the dashboard's chart library; the report renders the same specs to SVG with
vl-convert (Altair's own converter), so the file carries its charts and fetches nothing.
"""

from __future__ import annotations

import altair as alt
import pandas as pd

from imgbench.answer import Answer

IMAGES_PER_S = "images/s"
SHOWN_CANDIDATES = 8  # the best few, plus the common default, keep the chart readable
ROLE_COLOURS = {"recommended": "#2ca02c", "common default": "#7f7f7f", "measured": "#9ecae1"}
STEP_ORDER = ["read", "decode", "augment", "collate"]


def candidates_frame(answer: Answer) -> pd.DataFrame:
    """The best configurations and the common default, one row each, with their role."""
    defaults = {id(d) for d in (answer.default_0, answer.default_cores) if d is not None}
    shown = answer.candidates[:SHOWN_CANDIDATES] + [
        c for c in answer.candidates[SHOWN_CANDIDATES:] if id(c) in defaults
    ]
    records = []
    for index, measured in enumerate(shown):
        config = measured.configuration
        role = (
            "recommended"
            if index == 0
            else "common default"
            if id(measured) in defaults
            else "measured"
        )
        records.append(
            {
                "configuration": (
                    f"{config.loader} · {config.workers} wk · {config.decoder} · "
                    f"{config.augment} · {config.format}"
                    + (" · " + ",".join(config.knobs) if config.knobs else "")
                    + (f" · {config.allocator}" if config.allocator not in (None, "glibc") else "")
                ),
                "images_per_s": measured.images_per_s,
                "role": role,
                "case_id": measured.case_id,
                "run_id": measured.run_id,
            }
        )
    return pd.DataFrame(
        records, columns=["configuration", "images_per_s", "role", "case_id", "run_id"]
    )


def candidates_chart(answer: Answer) -> alt.Chart:
    frame = candidates_frame(answer)
    return (
        alt.Chart(frame)
        .mark_bar()
        .encode(
            x=alt.X("images_per_s:Q", title=f"end-to-end {IMAGES_PER_S} (median of rounds)"),
            y=alt.Y("configuration:N", title=None, sort="-x", axis=alt.Axis(labelLimit=520)),
            color=alt.Color(
                "role:N",
                title=None,
                scale=alt.Scale(domain=list(ROLE_COLOURS), range=list(ROLE_COLOURS.values())),
                legend=alt.Legend(orient="bottom"),
            ),
            tooltip=[
                "configuration:N",
                "role:N",
                alt.Tooltip("images_per_s:Q", title=IMAGES_PER_S, format=",.0f"),
                "case_id:N",
                "run_id:N",
            ],
        )
        # SVG text is measured with vl-convert's font, drawn with the browser's: room for both
        .properties(height=alt.Step(22), width=420, padding={"left": 80, "top": 5, "right": 5})
    )


def stage_times_frame(answer: Answer) -> pd.DataFrame:
    order = {step: index for index, step in enumerate(STEP_ORDER)}
    frame = pd.DataFrame(
        [{"step": step, "ms_per_image": ms} for step, ms in answer.stage_times_ms.items()],
        columns=["step", "ms_per_image"],
    )
    return frame.assign(order=frame["step"].map(order).fillna(len(order))).sort_values("order")


def stage_times_chart(answer: Answer) -> alt.Chart:
    """Where the recommended configuration's time per image goes, step by step."""
    frame = stage_times_frame(answer)
    bound = answer.bound.stage if answer.bound else None
    return (
        alt.Chart(frame.assign(bounds=frame["step"] == bound))
        .mark_bar()
        .encode(
            x=alt.X("ms_per_image:Q", title="ms of work per image (the recommended row)"),
            y=alt.Y("step:N", title=None, sort=alt.SortField("order")),
            color=alt.Color(
                "bounds:N",
                title="bounds it",
                scale=alt.Scale(domain=[True, False], range=["#d62728", "#bdbdbd"]),
                legend=alt.Legend(orient="bottom"),
            ),
            tooltip=["step:N", alt.Tooltip("ms_per_image:Q", format=".3f", title="ms/image")],
        )
        .properties(height=alt.Step(24), width=420)
    )
