"""The allocator effect: the same case under several allocators, on the Readers, Loaders and
Augmentations pages and in the Overview; nothing of it where the rows ran under one allocator."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from dashboard.allocators import base_case_id, case_label, effects, largest, main_session, times
from dashboard.data import label

from imgbench.results.store import load_results
from tests.dashboard.conftest import chart_data, chart_specs, chart_with, texts
from tests.dashboard.fixtures import ALLOCATOR_EFFECT, MINOR_FAULTS, allocator_runs

FAULTS = "page_faults_minor_per_image"
ALL = {"glibc", "glibc-tuned", "jemalloc", "tcmalloc"}
PILLOW = "pillow · open-convert · jpeg · memory · 1 thread"
LARGEST = re.compile(r"Largest effect: (?P<case>.+?): (?P<alloc>\S+) (?P<factor>[\d.]+)x glibc")


def ok_rows(folder: Path) -> pd.DataFrame:
    frame = label(load_results(folder).frame)
    return frame[frame["status"] == "ok"]


def median_images_per_s(row: pd.Series) -> float:
    return float(np.median(row["images_per_round"] / np.asarray(row["samples_s"])))


def the_row(
    rows: pd.DataFrame, stage: str, library: str, allocator: str, **where: object
) -> pd.Series:
    picked = rows[
        (rows["stage"] == stage) & (rows["library"] == library) & (rows["allocator"] == allocator)
    ]
    for column, value in where.items():
        picked = picked[picked[column] == value]
    assert len(picked) == 1, (stage, library, allocator, where)
    return picked.iloc[0]


def test_base_case_id_drops_only_the_allocator_parameter() -> None:
    ids = pd.Series(
        [
            "read/pillow/open-convert[allocator=glibc-tuned,codec=jpeg,threads=1]",
            "read/pillow/open-convert[codec=jpeg,threads=1]",
            "loader/x/y[accelerator_images_per_s=100,allocator=jemalloc,workers=2]",
            "read/a/b[allocator=tcmalloc]",
        ]
    )
    assert list(base_case_id(ids)) == [
        "read/pillow/open-convert[codec=jpeg,threads=1]",
        "read/pillow/open-convert[codec=jpeg,threads=1]",
        "loader/x/y[accelerator_images_per_s=100,workers=2]",
        "read/a/b[]",
    ]


def test_effects_match_cases_across_sessions_and_judge_noise(allocator_results: Path) -> None:
    rows = ok_rows(allocator_results)
    reads = rows[rows["stage"] == "read"].assign(case=lambda f: case_label(f))
    summary = effects(reads, "case").set_index(["case", "allocator"])
    cases = set(summary.index.get_level_values("case"))
    assert cases == {  # only the cases the allocator sessions re-measured
        "pillow · open-convert · jpeg · 1 thread",
        "opencv · imdecode-rgb · jpeg · 1 thread",
        "simplejpeg · decode · jpeg · 1 thread",
    }
    pillow = summary.loc["pillow · open-convert · jpeg · 1 thread"]
    assert set(pillow.index) == ALL and set(pillow["baseline"]) == {"glibc"}
    glibc = median_images_per_s(
        the_row(rows, "read", "pillow", "glibc", variant="open-convert", codec="jpeg", threads=1)
    )
    tuned = median_images_per_s(the_row(rows, "read", "pillow", "glibc-tuned"))
    assert pillow.loc["glibc-tuned", "factor"] == pytest.approx(tuned / glibc)
    assert pillow.loc["glibc-tuned", "beyond_noise"]
    assert pillow.loc["glibc-tuned", FAULTS] == MINOR_FAULTS["glibc-tuned"]
    # simplejpeg allocates through numpy: the allocators are within the rounds' noise
    simple = summary.loc["simplejpeg · decode · jpeg · 1 thread"]
    assert not simple["beyond_noise"].any()
    effect = largest(summary.reset_index())
    assert effect is not None and (effect.case, effect.allocator) == (
        "pillow · open-convert · jpeg · 1 thread",
        "glibc-tuned",
    )


def test_largest_effect_counts_a_slowdown() -> None:
    summary = pd.DataFrame(
        {
            "case": ["a", "a", "b", "b"],
            "allocator": ["glibc", "jemalloc", "glibc", "tcmalloc"],
            "baseline": ["glibc"] * 4,
            "factor": [1.0, 1.3, 1.0, 0.5],
            "images_per_s": [100.0, 130.0, 100.0, 50.0],
            "baseline_images_per_s": [100.0] * 4,
            "beyond_noise": [False, True, False, True],
        }
    )
    effect = largest(summary)
    assert effect is not None and (effect.allocator, times(effect.factor)) == ("tcmalloc", "0.5x")
    assert "tcmalloc 0.5x glibc" in effect.text()


def test_main_session_keeps_allocator_sessions_out_of_the_other_charts(
    allocator_results: Path,
) -> None:
    rows = ok_rows(allocator_results)
    shown, aside = main_session(rows)
    assert set(shown["allocator"]) == {"glibc"} and set(aside["allocator"]) == ALL - {"glibc"}
    only = rows[rows["allocator"].isin(["jemalloc", "tcmalloc"])]  # the filter kept two sessions
    shown, aside = main_session(only)
    assert shown["allocator"].nunique() == 1 and len(shown) + len(aside) == len(only)


def test_readers_show_the_allocator_effect(shown_app, allocator_results: Path) -> None:
    at = shown_app(allocator_results, "readers")
    assert "Allocator effect" in texts(at, "subheader")
    chart = chart_with(at, FAULTS)
    assert chart is not None
    pillow = chart[chart["case"] == PILLOW].set_index("allocator")
    assert set(pillow.index) == ALL
    for name, faults in MINOR_FAULTS.items():  # the tooltip's page faults, per allocator
        assert pillow.loc[name, FAULTS] == faults
    rows = ok_rows(allocator_results)
    glibc = median_images_per_s(
        the_row(rows, "read", "pillow", "glibc", variant="open-convert", codec="jpeg", threads=1)
    )
    tuned = median_images_per_s(the_row(rows, "read", "pillow", "glibc-tuned"))
    assert pillow.loc["glibc-tuned", "images_per_s"] == pytest.approx(tuned)
    assert pillow.loc["glibc-tuned", "factor"] == pytest.approx(tuned / glibc)
    assert tuned / glibc == pytest.approx(ALLOCATOR_EFFECT["read", "pillow"]["glibc-tuned"], 0.1)

    caption = LARGEST.search(texts(at, "caption"))
    assert caption is not None, texts(at, "caption")
    assert caption["case"] == PILLOW and caption["alloc"] == "glibc-tuned"
    assert caption["factor"] + "x" == times(tuned / glibc)  # e.g. "glibc-tuned 1.9x glibc"
    spec = json.dumps(chart_specs(at))
    assert "minor page faults per image" in spec and '"images/s"' in spec  # units on the axis

    # the throughput chart shows the main session's row only, not the four allocators pooled
    bars = chart_data(at, 0, "ci_low")
    bar = bars[
        (bars["reader"] == "pillow · open-convert")
        & (bars["codec"] == "jpeg")
        & (bars["threads_label"] == "1")
    ].iloc[0]
    assert bar["rows"] == 1 and bar["images_per_s"] == pytest.approx(glibc)
    assert "rows of the allocator sessions" in texts(at, "caption")


def test_loaders_show_the_allocator_effect(shown_app, allocator_results: Path) -> None:
    at = shown_app(allocator_results, "loaders")
    chart = chart_with(at, FAULTS)
    assert chart is not None
    assert set(chart["case"]) == {
        "torch-dataloader · folder-pillow · batch 32 · 0 workers",
        "torch-dataloader · folder-pillow · batch 32 · 2 workers",
    }
    assert set(chart["allocator"]) == ALL
    caption = LARGEST.search(texts(at, "caption"))
    assert caption is not None and caption["case"].startswith("torch-dataloader")
    largest_shown = chart.loc[np.log(chart["factor"]).abs().idxmax()]
    assert caption["alloc"] == largest_shown["allocator"] == "glibc-tuned"
    assert caption["factor"] + "x" == times(largest_shown["factor"])
    assert float(caption["factor"]) == pytest.approx(1.3, abs=0.1)
    curve = chart_data(at, 0, "workers_n")  # scaling: main session only
    assert (curve["rows"] == 1).all()


def test_augment_shows_the_allocator_effect(shown_app, allocator_results: Path) -> None:
    at = shown_app(allocator_results, "augment")
    chart = chart_with(at, FAULTS)
    assert chart is not None and set(chart["case"]) == {
        "albumentations · train-classification",
        "torchvision · train-classification",
    }
    caption = LARGEST.search(texts(at, "caption"))
    assert caption is not None and caption["alloc"] == "glibc-tuned"


def test_overview_names_the_allocator_that_pays(shown_app, allocator_results: Path) -> None:
    at = shown_app(allocator_results)
    text = texts(at, "markdown")
    assert "Allocator: glibc-tuned pays" in text
    assert re.search(
        r"pillow · open-convert · jpeg · 1 thread \(decode\): glibc-tuned 1\.\dx glibc", text
    )


@pytest.mark.parametrize("page", ["overview", "readers", "augment", "loaders"])
def test_one_allocator_shows_no_effect(shown_app, standard_results: Path, page: str) -> None:
    at = shown_app(standard_results, page)
    assert chart_with(at, FAULTS) is None
    assert "Allocator effect" not in texts(at, "subheader")
    assert "Largest effect" not in texts(at, "caption")
    assert "Allocator:" not in texts(at, "markdown")
    if page != "overview":
        assert "imgbench run --profile default" in texts(at, "caption")  # how to get it


def test_allocator_filter_with_one_allocator_hides_the_effect(
    open_app, allocator_results: Path
) -> None:
    at = open_app(allocator_results, "readers")
    at.multiselect(key="filter_allocator").set_value(["glibc"]).run()
    assert chart_with(at, FAULTS) is None
    assert "Largest effect" not in texts(at, "caption")
    assert "**Allocator** filter keeps glibc" in texts(at, "caption")
    at.multiselect(key="filter_allocator").set_value(["jemalloc"]).run()
    bars = chart_data(at, 0, "ci_low")  # the page's charts now show the jemalloc session
    rows = ok_rows(allocator_results)
    jemalloc = median_images_per_s(the_row(rows, "read", "pillow", "jemalloc"))
    shown = bars[bars["reader"] == "pillow · open-convert"]
    assert shown["images_per_s"].item() == pytest.approx(jemalloc)


def test_allocator_sessions_share_the_main_sessions_run_group() -> None:
    """The Run filter preselects the newest run with its sessions: the comparison is there."""
    runs = allocator_runs()
    assert len({spec.run_group for spec in runs}) == 1
    assert max(runs, key=lambda spec: spec.created).allocator != "glibc"
