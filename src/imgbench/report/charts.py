"""The answer's charts (Altair), drawn the same on the dashboard's Overview and in the report.

Altair is the dashboard's chart library; the report renders the same specs to SVG with
vl-convert (Altair's own converter), so the file carries its charts and fetches nothing.
"""

from __future__ import annotations

import altair as alt
import pandas as pd

from imgbench.answer import Answer
from imgbench.answer.recommend import ROLES
from imgbench.report.document import SHOWN_CANDIDATES

IMAGES_PER_S = "images/s"
ROLE_COLOURS = dict(
    zip(ROLES, ["#2ca02c", "#98df8a", "#7f7f7f", "#9ecae1", "#dadaeb"], strict=True)
)
STEP_ORDER = ["read", "decode", "augment", "collate"]
COLUMNS = [
    "configuration",
    "images_per_s",
    "ci_low",
    "ci_high",
    "role",
    "source",
    "case_id",
    "run_id",
]


def candidates_frame(answer: Answer) -> pd.DataFrame:
    """The best configurations, the tied set and the common default: one row (one bar) each,
    labelled so that no two share a label, with the 95% interval (``Answer.shown``)."""
    records = []
    for shown in answer.shown(SHOWN_CANDIDATES):
        measured, interval = shown.measured, shown.measured.interval
        records.append(
            {
                "configuration": shown.label,
                "images_per_s": measured.images_per_s,
                "ci_low": interval.low if interval else measured.images_per_s,
                "ci_high": interval.high if interval else measured.images_per_s,
                "role": shown.role,
                "source": measured.source,
                "case_id": measured.case_id,
                "run_id": measured.run_id,
            }
        )
    return pd.DataFrame(records, columns=COLUMNS)


def candidates_chart(answer: Answer) -> alt.LayerChart:
    """One bar per configuration (never stacked: every label is distinct) and its 95% interval."""
    frame = candidates_frame(answer)
    order = list(frame.sort_values("images_per_s", ascending=False)["configuration"])
    y = alt.Y("configuration:N", title=None, sort=order, axis=alt.Axis(labelLimit=520))
    tooltip: list[str | alt.Tooltip] = [
        "configuration:N",
        "role:N",
        "source:N",
        alt.Tooltip("images_per_s:Q", title=IMAGES_PER_S, format=",.0f"),
        alt.Tooltip("ci_low:Q", title="95% interval, low", format=",.0f"),
        alt.Tooltip("ci_high:Q", title="95% interval, high", format=",.0f"),
        "case_id:N",
        "run_id:N",
    ]
    roles = [r for r in ROLE_COLOURS if r in set(frame["role"])]  # the legend: what is drawn
    base = alt.Chart(frame).encode(y=y, tooltip=tooltip)
    bars = base.mark_bar().encode(
        x=alt.X(
            "images_per_s:Q",
            title=f"end-to-end {IMAGES_PER_S} (median of rounds; line: 95% interval)",
            stack=None,
        ),
        color=alt.Color(
            "role:N",
            title=None,
            scale=alt.Scale(domain=roles, range=[ROLE_COLOURS[r] for r in roles]),
            legend=alt.Legend(orient="bottom", columns=3),
        ),
    )
    rules = base.mark_rule(color="black").encode(x="ci_low:Q", x2="ci_high:Q")
    # SVG text is measured with vl-convert's font, drawn with the browser's: room for both
    return alt.LayerChart(layer=[bars, rules]).properties(
        height=alt.Step(22), width=420, padding={"left": 80, "top": 5, "right": 5}
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
