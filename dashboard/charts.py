"""Altair building blocks with the house conventions: units in axis titles, tooltips, log scales
when a range spans orders of magnitude."""

from __future__ import annotations

from collections.abc import Sequence

import altair as alt
import numpy as np
import pandas as pd
import streamlit as st

LOG_SPAN = 20.0  # max/min above which an axis goes logarithmic
IMAGES_PER_S = "images/s"
LABELS = alt.Axis(labelLimit=320)  # long "library · variant" labels stay readable
LEGEND = alt.Legend(labelLimit=320)
# every top-level chart st.altair_chart takes
AnyChart = (
    alt.Chart
    | alt.LayerChart
    | alt.FacetChart
    | alt.ConcatChart
    | alt.HConcatChart
    | alt.VConcatChart
    | alt.RepeatChart
)


def scale_for(values: Sequence[float] | pd.Series, zero: bool = True) -> alt.Scale:
    """Log scale when positive values span more than ``LOG_SPAN``×, else linear."""
    array = np.asarray(pd.to_numeric(pd.Series(values), errors="coerce"), dtype=float)
    positive = array[np.isfinite(array) & (array > 0)]
    if positive.size and positive.max() / positive.min() > LOG_SPAN:
        return alt.Scale(type="log")
    return alt.Scale(zero=zero)


def is_log(scale: alt.Scale) -> bool:
    return scale.to_dict().get("type") == "log"


def title_with_scale(title: str, scale: alt.Scale) -> str:
    return f"{title}, log scale" if is_log(scale) else title


def bar_x(
    field: str, title: str, values: Sequence[float] | pd.Series
) -> tuple[dict[str, object], alt.Scale]:
    """x (and x2) encodings for bars of ``field``. Vega-Lite draws no bar at all on a log scale
    unless the bar has a positive start, so log bars start at the power of ten below the data."""
    scale = scale_for(values)
    encoding: dict[str, object] = {
        "x": alt.X(f"{field}:Q", title=title_with_scale(title, scale), scale=scale)
    }
    if is_log(scale):
        array = np.asarray(pd.to_numeric(pd.Series(values), errors="coerce"), dtype=float)
        smallest = array[np.isfinite(array) & (array > 0)].min()
        encoding["x2"] = alt.datum(float(10 ** np.floor(np.log10(smallest))))
    return encoding, scale


def show(chart: AnyChart) -> None:
    """Every chart full width, so long labels and facets fit."""
    st.altair_chart(chart, width="stretch")


def bars_with_interval(
    data: pd.DataFrame,
    category: str,
    value: str,
    low: str | None,
    high: str | None,
    value_title: str,
    category_title: str,
    color: str | None = None,
    color_title: str | None = None,
    tooltip: Sequence[alt.Tooltip | str] = (),
    row: str | None = None,
) -> alt.LayerChart | alt.FacetChart:
    """Horizontal bars of ``value`` per ``category`` with an interval, optionally one row per facet."""
    values = pd.concat([data[value], *(data[c] for c in (low, high) if c)])
    x_encoding, scale = bar_x(value, value_title, values)
    x_title = title_with_scale(value_title, scale)
    base = alt.Chart().encode(
        y=alt.Y(f"{category}:N", title=category_title, sort="-x", axis=LABELS),
        tooltip=list(tooltip),
        yOffset=alt.YOffset(f"{color}:N") if color else alt.Undefined,
    )
    bars = base.mark_bar().encode(
        **x_encoding,
        color=alt.Color(f"{color}:N", title=color_title or color) if color else alt.Undefined,
    )
    layers: list[alt.Chart] = [bars]
    if low and high:
        layers.append(
            base.mark_rule(color="black").encode(
                x=alt.X(f"{low}:Q", scale=scale, title=x_title), x2=f"{high}:Q"
            )
        )
    chart = alt.layer(*layers, data=data)
    if row:
        return (
            chart.properties(height=alt.Step(14 if color else 20))
            .facet(
                row=alt.Row(
                    f"{row}:N", title=None, header=alt.Header(labelAngle=0, labelAlign="left")
                )
            )
            .resolve_scale(y="independent")
        )
    return chart.properties(height=alt.Step(14 if color else 20))
