"""Every page through Streamlit's AppTest on fixture results, checking the data behind the charts."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from imgbench.results.store import load_results
from tests.dashboard.conftest import PAGES, chart_data, chart_specs, texts
from tests.dashboard.fixtures import standard_runs, write_run

NEWEST_RUN = standard_runs()[1].run_id


def newest_rows(folder: Path) -> pd.DataFrame:
    frame = load_results(folder).frame
    return frame[(frame["run_id"] == NEWEST_RUN) & (frame["status"] == "ok")]


def test_overview_answers_with_a_real_configuration(shown_app, standard_results: Path) -> None:
    """The first screen names the fastest real loader configuration (ok rows), its images/s, its
    speed-up over the common default and what bounds it; the copy-on-access experiment, with
    millions of "images"/s, and the ceilings are references, never the answer."""
    at = shown_app(standard_results)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Runs"] == "1"  # the newest run is preselected
    assert metrics["Skipped"] == "1" and metrics["Failed"] == "1"
    rows = newest_rows(standard_results)
    loaders = rows[(rows["stage"] == "loader") & (rows["library"] != "cow-experiment")]
    loaders = loaders[~loaders["params_json"].str.contains("accelerator_images_per_s")]
    best = loaders.loc[loaders["images_per_s_median"].idxmax()]
    candidates = chart_data(at, 0, "role")
    recommended = candidates[candidates["role"] == "recommended"]
    # the fastest is the pick or ties with it (the secondary rule picks within the tied set)
    tied = candidates[candidates["role"].isin(["recommended", "ties with it"])]
    assert best["case_id"] in set(tied["case_id"]) and len(recommended) == 1
    pick = rows[rows["case_id"] == recommended["case_id"].item()]["images_per_s_median"].item()
    assert recommended["images_per_s"].item() == pytest.approx(pick)
    assert (candidates["ci_low"] < candidates["images_per_s"]).all()
    assert metrics["Recommended, images/s (95% interval)"].startswith(f"{pick:,.0f} (")
    default_0 = rows[(rows["variant"] == "files-pillow-torchvision") & (rows["workers"] == 0)][
        "images_per_s_median"
    ].item()
    assert metrics["× default, 0 workers"].startswith(f"{pick / default_0:.1f}x (")
    assert metrics["Bounded by"] == "augment"
    page = texts(at, "markdown")
    assert f"`{recommended['case_id'].item()} in run {NEWEST_RUN}`" in page
    assert "Next thing to try" in page
    assert "cow-experiment" not in set(candidates["configuration"].str.split(" ").str[0])
    references = at.dataframe[0].value
    assert set(references["kind"]) == {"experiment", "ceiling"}
    assert "cow-experiment · list-of-objects · 2 workers" in set(references["what"])
    assert not references["what"].str.contains("reduce").any()
    runs = at.dataframe[1].value  # the runs table lists every run whatever the Run filter
    assert set(runs["run_id"]) == {spec.run_id for spec in standard_runs()}


def test_overview_answers_per_machine_never_pooled(open_app, tmp_path: Path) -> None:
    """Two machines in the folder (Run filter cleared): one answer each, each from its rows."""
    base = standard_runs()[0]
    write_run(tmp_path, base)
    other = replace(
        base,
        run_id="20261122T120000Z-default-dddddd",
        created=base.created + timedelta(days=2),
        machine_id="m-big-16core",
        hostname="big-box",
        speed=3.0,
        seed=9,
    )
    write_run(tmp_path, other)
    at = open_app(tmp_path)
    at.multiselect(key="filter_run").set_value([]).run()
    subheaders = texts(at, "subheader")
    assert "ci-box · m-ci-2core" in subheaders and "big-box · m-big-16core" in subheaders
    assert "2 machine, dataset and output combinations" in texts(at, "caption")
    first, second = chart_data(at, 0, "role"), chart_data(at, 2, "role")
    assert set(first["run_id"]) == {other.run_id}  # the newest machine's answer first
    assert set(second["run_id"]) == {base.run_id}


def test_readers_throughput_interval_and_native(shown_app, standard_results: Path) -> None:
    at = shown_app(standard_results, "readers")
    bars = chart_data(at, 0, "ci_low")
    rows = newest_rows(standard_results)
    one = rows[
        (rows["stage"] == "read")
        & (rows["library"] == "pillow")
        & (rows["variant"] == "open-convert")
        & (rows["codec"] == "png")
        & (rows["threads"] == 1)
    ].iloc[0]
    rounds = one["images_per_round"] / np.asarray(one["samples_s"])
    shown = bars[
        (bars["reader"] == "pillow · open-convert")
        & (bars["codec"] == "png")
        & (bars["threads_label"] == "1")
    ].iloc[0]
    assert shown["images_per_s"] == pytest.approx(np.median(rounds))
    assert shown["ci_low"] <= shown["images_per_s"] <= shown["ci_high"]
    assert rounds.min() <= shown["ci_low"] and shown["ci_high"] <= rounds.max()

    percent = chart_data(at, 1, "percent_of_native")
    native = rows[rows["stage"] == "native"]["images_per_s_median"].item()
    simple = rows[(rows["library"] == "simplejpeg") & (rows["threads"] == 1)]
    expected = 100 * simple["images_per_s_median"].item() / native
    got = percent[(percent["reader"] == "simplejpeg · decode") & (percent["threads_label"] == "1")]
    assert got["percent_of_native"].item() == pytest.approx(expected)

    reduced = chart_data(at, 2, "speedup")
    assert set(reduced["decode"]) == {"full", "reduced"}
    assert (reduced["speedup"] > 2).all()  # the fixture's reduced decode is ~3x


def test_augment_heatmap_flags_disagreement(shown_app, standard_results: Path) -> None:
    at = shown_app(standard_results, "augment")
    heat = chart_data(at, 0, "flag")
    flagged = heat[heat["flag"] == "≠"]
    assert list(zip(flagged["runner"], flagged["name"], strict=True)) == [
        ("kornia", "color_jitter")
    ]
    assert "kornia color_jitter" in texts(at, "warning")
    assert {"albumentations", "torchvision", "kornia"} <= set(heat["runner"])
    assert heat.loc[heat["runner"] == "torchvision", "agrees"].astype(bool).all()  # "pass" flag
    pipelines = chart_data(at, 1, "ci_low")
    assert "kornia · batch 32" in set(pipelines["runner"])
    assert set(pipelines["name"]) == {"train-classification", "light"}
    assert "segmentation" not in set(heat["name"])  # task rows: their own table
    assert any("segmentation" in set(d.value["name"]) for d in at.dataframe)


def test_formats_warm_cold_order_and_size(shown_app, standard_results: Path) -> None:
    at = shown_app(standard_results, "formats")
    reads = chart_data(at, 0, "cache_state")
    assert set(reads["cache_state"]) == {"warm", "cold"}
    assert set(reads["order"]) == {"sequential", "shuffled"}
    lmdb = reads[(reads["library"] == "lmdb") & (reads["order"] == "sequential")]
    warm = lmdb.loc[lmdb["cache_state"] == "warm", "images_per_s"].item()
    cold = lmdb.loc[lmdb["cache_state"] == "cold", "images_per_s"].item()
    assert cold < warm
    writes = chart_data(at, 1, "sync_share").set_index("library")["sync_share"]
    assert writes["folder"] == pytest.approx(0.8) and writes["tar"] == pytest.approx(0.3)
    sizes = chart_data(at, 2, "size_ratio")
    assert sizes.set_index("library")["size_ratio"]["tar"] == pytest.approx(1.9)
    specs = chart_specs(at)
    assert "log scale" in str(specs[0])  # raw ceiling vs cold folder spans orders of magnitude


def test_loaders_scaling_memory_breakdown_au(open_app, standard_results: Path) -> None:
    at = open_app(standard_results, "loaders")
    curve = chart_data(at, 0, "workers_n")
    sweeps = curve[curve["pipeline"].str.contains("files-opencv-albumentations")]
    for _, group in sweeps.groupby("pipeline"):
        assert sorted(group["workers_n"]) == [0, 1, 2, 4]
    memory = chart_data(at, 2, "process")
    assert set(memory["process"]) == {"main", "worker-0", "worker-1", "worker-2", "worker-3"}
    assert (memory["mb"] > 0).all()
    at.radio(key="loaders_memory_kind").set_value("USS").run()
    uss = chart_data(at, 2, "process")
    assert uss["mb"].sum() < memory["mb"].sum()  # USS excludes shared pages
    at.radio(key="loaders_memory_kind").set_value("RSS").run()
    rss = chart_data(at, 2, "process")
    worker = rss[rss["process"] == "worker-0"].sort_values("t_s")
    assert len(worker) > 4 * len(memory[memory["process"] == "worker-0"])  # the fast RSS clock
    assert worker["mb"].iloc[-1] > worker["mb"].iloc[0]  # growth drawn
    captions = texts(at, "caption")
    assert "RSS alone every 0.1 s (cost 0.002 s reading statm)" in captions
    parts = chart_data(at, 3, "part")
    assert set(parts["part"]) == {"read", "decode", "augment", "collate"}
    au = chart_data(at, 4, "au_percent")
    assert au["au_percent"].between(0, 100).all()


def test_loaders_experiments_have_their_own_chart(shown_app, standard_results: Path) -> None:
    """The copy-on-access experiment (millions of "images"/s) and AU emulation never share the
    real loaders' axis."""
    at = shown_app(standard_results, "loaders")
    real = chart_data(at, 0, "workers_n")
    assert not real["pipeline"].str.contains("cow-experiment|au-sleep").any()
    assert real["pipeline"].str.contains("files-pillow-torchvision").any()  # the common default
    assert real["images_per_s"].max() < 10_000
    experiments = chart_data(at, 1, "label")
    assert set(experiments["pipeline"].str.split(" · ").str[0]) == {
        "cow-experiment",
        "torch-dataloader",
    }
    assert experiments["pipeline"].str.contains("au-sleep").any()
    assert "Experiments (not pipelines)" in texts(at, "subheader")


def test_explorer_search_and_columns(open_app, standard_results: Path) -> None:
    at = open_app(standard_results, "explorer")
    table = at.dataframe[0].value
    assert len(table) == len(load_results(standard_results).frame.query("run_id == @NEWEST_RUN"))
    at.text_input(key="explorer_search").set_value("cannot import").run()
    table = at.dataframe[0].value
    assert list(table["status"]) == ["skipped"]


def test_sidebar_filters_narrow_every_page(open_app, standard_results: Path) -> None:
    at = open_app(standard_results, "readers")
    at.multiselect(key="filter_library").set_value(["pillow"]).run()
    assert set(chart_data(at, 0, "ci_low")["library"]) == {"pillow"}
    at.multiselect(key="filter_run").set_value([]).run()  # clear: pool every run
    pooled = chart_data(at, 0, "ci_low")
    assert (pooled["rows"] == 2).all()  # one row per run pooled per configuration


@pytest.mark.parametrize("page", PAGES)
def test_empty_folder_says_what_to_run(open_app, tmp_path: Path, page: str) -> None:
    at = open_app(tmp_path, page)
    assert "make bench" in texts(at, "info") + texts(at, "markdown")
    assert not at.get("vega_lite_chart")


def test_missing_folder_says_what_to_run(open_app, tmp_path: Path) -> None:
    at = open_app(tmp_path / "nope")
    assert "does not exist" in texts(at, "info")


@pytest.mark.parametrize("page", ["augment", "formats", "loaders"])
def test_stage_without_rows_names_its_command(open_app, read_only_results: Path, page) -> None:
    at = open_app(read_only_results, page)
    info = texts(at, "info")
    assert "results yet" in info and f"imgbench run -k {page.rstrip('s')}" in info


def test_corrupt_file_is_named_and_mixed_schemas_load(open_app, damaged_results: Path) -> None:
    at = open_app(damaged_results)
    assert "half-written.parquet" in texts(at, "warning")
    at.multiselect(key="filter_run").set_value([]).run()
    assert {m.label: m.value for m in at.metric}["Runs"] == "2"
    for page in PAGES[1:]:
        at.switch_page(f"views/{page}.py").run()
        assert not at.exception, (page, [e.value for e in at.exception])
    at.switch_page("views/readers.py").run()
    at.multiselect(key="filter_run").set_value(
        [o for o in at.multiselect(key="filter_run").options if "old-schema" in o]
    ).run()
    assert len(chart_data(at, 0, "ci_low")) > 0  # the schema-0 run still draws


def test_log_scale_bars_have_a_start(shown_app, standard_results: Path) -> None:
    """Vega-Lite draws nothing for a bar on a log axis without x2: every such bar must have one."""

    def bars(node: object) -> list[dict]:
        found = []
        if isinstance(node, dict):
            mark = node.get("mark")
            kind = mark.get("type") if isinstance(mark, dict) else mark
            if kind == "bar":
                found.append(node)
            for value in node.values():
                found.extend(bars(value))
        elif isinstance(node, list):
            for value in node:
                found.extend(bars(value))
        return found

    checked = 0
    for page in PAGES:
        at = shown_app(standard_results, page)
        for spec in chart_specs(at):
            for bar in bars(spec):
                x = bar.get("encoding", {}).get("x", {})
                if x.get("scale", {}).get("type") == "log":
                    assert "x2" in bar["encoding"], (page, x)
                    checked += 1
    assert checked  # the fixture has log-scale bars (formats, augment pipelines)


def test_overview_states_the_distance_to_the_in_ram_ceilings(open_app, tmp_path: Path) -> None:
    """The pick's distance to the in-RAM ceilings and the workers per training rank are on the
    first screen, beside the answer (tests/answer/test_headroom.py: 2x and 4x the pick)."""
    from imgbench.results.store import write_rows
    from tests.answer.test_headroom import rows_with_headroom

    rows, _ = rows_with_headroom()
    write_rows(rows, tmp_path / "run.parquet")
    page = texts(open_app(tmp_path), "markdown")
    assert "Nothing left to read" in page and "the pick runs at 50% (" in page
    assert "Training ranks" in page and "give each rank 1 worker (the fastest)" in page
