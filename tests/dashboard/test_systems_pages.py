"""Each system at its best on the Overview and the Loaders page; the Loaders page draws one chart
per task, each system's best line by default and every line behind a toggle, and its tables hold
no empty column and no figure finer than its interval supports."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from imgbench.answer.systems import figure_places
from imgbench.results.store import write_rows
from tests.answer.test_systems import DALI_EXAMPLE, loader_rows, segmentation
from tests.dashboard.conftest import chart_data, chart_specs, texts
from tests.dashboard.fixtures import run_rows, standard_runs

BASE = standard_runs()[0]
TASKS = ["classification", "segmentation"]
OpenApp = Callable[..., AppTest]


@pytest.fixture(scope="module")
def systems_results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One run: every stage, the loader rows with their systems (DALI twice: same recipe, and
    as documented 13% faster), and the DataLoader and DALI again as segmentation rows."""
    folder = tmp_path_factory.mktemp("systems")
    rows = [r for r in run_rows(BASE) if r["stage"] != "loader"] + loader_rows()
    write_rows(rows + segmentation(rows, 2.0), folder / f"{BASE.run_id}.parquet")
    return folder


def scaling_charts(at: AppTest) -> list[pd.DataFrame]:
    """The data of the scaling charts (the ones with a task and a line per configuration)."""
    found = []
    for index in range(len(at.get("vega_lite_chart"))):
        try:
            data = chart_data(at, index, "line")
        except AssertionError:
            continue
        if "task" in data and "workers_n" in data:
            found.append(data)
    return found


def assert_rounded(table: pd.DataFrame, curve: pd.DataFrame) -> None:
    """No all-null column, and no figure with more digits than its interval supports: each
    line's best images/s (the chart's unrounded figures) rounded by ``figure_places``."""
    assert not table.empty
    assert table.notna().any(axis=0).all(), table.columns[~table.notna().any(axis=0)]
    assert "speedup_vs_0_workers" not in table
    for _, row in table.iterrows():
        points = curve[(curve["pipeline"] == row["configuration"])]
        raw = points.loc[points["images_per_s"].idxmax()]
        assert raw["workers_n"] == row["workers (best)"]
        places = figure_places(raw["images_per_s"], raw["ci_low"], raw["ci_high"])
        assert row["images/s"] == round(raw["images_per_s"], places), row.to_dict()
        assert row["images/s"] != raw["images_per_s"]  # the fixture's figures have decimals
        for column in ("images/s", "95% low", "95% high", "× 0 workers"):
            value = row.get(column)
            if value is not None and not pd.isna(value):  # three significant figures at most
                assert value == float(f"{value:.3g}"), (column, value)


def test_loaders_one_chart_per_task_each_system_at_its_best(
    open_app: OpenApp, systems_results: Path
) -> None:
    at = open_app(systems_results, "loaders")
    charts = scaling_charts(at)
    assert [set(c["task"]) for c in charts] == [{t} for t in TASKS]  # one per task, apart
    titles = [str(s.get("title")) for s in chart_specs(at)]
    assert sum("each system's best and the common default" in t for t in titles) == len(TASKS)
    classification = charts[0]
    roles = classification.drop_duplicates("line").set_index("line")["role"]
    assert set(roles) == {"system's best", "common default"}
    best = classification[classification["role"] == "system's best"]
    assert set(best["system"]) == {"DataLoader", "thread pool", "DALI"}
    assert best.groupby("system")["pipeline"].nunique().eq(1).all()  # one line per system
    assert classification["pipeline"].str.contains("files-pillow-torchvision").any()
    seg = charts[1]
    assert set(seg["system"]) == {"DataLoader", "DALI"}
    specs = [s for s in chart_specs(at) if "each system's best" in str(s.get("title"))]
    for spec in specs:  # the legend below the chart, every label whole
        (legend,) = (
            layer["encoding"]["color"]["legend"]
            for layer in spec["layer"]
            if layer.get("encoding", {}).get("color", {}).get("legend") is not None
        )
        assert legend["orient"] == "bottom" and legend["labelLimit"] == 0
    tables = [t.value for t in at.dataframe if "images/s" in t.value]
    assert len(tables) == len(TASKS)
    for table, curve in zip(tables, charts, strict=True):
        assert_rounded(table, curve)
    assert len(tables[0]) == classification["line"].nunique()
    page = texts(at, "markdown")
    assert "Each system at its best · classification: ci-box" in page
    assert "Each system at its best · segmentation: ci-box" in page
    assert f"| DALI | as documented: {DALI_EXAMPLE} |" in page
    assert "+13% over its same-recipe best" in page

    toggle = at.toggle(key="loaders_every_configuration")
    assert toggle.value is False
    toggle.set_value(True).run()
    every = scaling_charts(at)
    assert [set(c["task"]) for c in every] == [{t} for t in TASKS]
    assert every[0]["line"].nunique() > classification["line"].nunique()
    assert "other configuration" in set(every[0]["role"])
    more = [t.value for t in at.dataframe if "images/s" in t.value]
    assert len(more[0]) == every[0]["line"].nunique()
    for table, curve in zip(more, every, strict=True):
        assert_rounded(table, curve)


def test_overview_shows_each_system_at_its_best(shown_app, systems_results: Path) -> None:
    at = shown_app(systems_results)
    page = texts(at, "markdown")
    assert "#### Each system at its best · classification: ci-box" in page
    assert "#### Each system at its best · segmentation: ci-box" in page
    assert "| the pick |" in page
    assert "as documented (region-of-interest decode): +13% over its same-recipe best" in page
    assert at.dataframe[0].value["kind"].isin(["experiment", "ceiling"]).all()  # references


def test_loaders_without_systems_fall_back_to_the_library(shown_app, standard_results) -> None:
    at = shown_app(standard_results, "loaders")
    (chart,) = scaling_charts(at)
    assert set(chart["system"]) == {"torch-dataloader", "threads"}
    table = next(t.value for t in at.dataframe if "images/s" in t.value)
    assert_rounded(table, chart)
    assert "Each system at its best · classification" in texts(at, "markdown")
