"""Decoders ranked on one thread and inside the loader (imgbench.answer.decoders) from a small
hand-made results frame, the report's two tables, and the Overview choosing a supply row."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from typer.testing import CliRunner

from imgbench.answer import answers
from imgbench.answer.decoders import decoder_rankings
from imgbench.cli import app
from imgbench.results.store import load_results, write_rows
from tests.dashboard.fixtures import SUPPLY_IPS, run_rows, slow_down, standard_runs

BASE = standard_runs()[0]
STAGES = ("read", "loader", "supply")


def frame_of(rows: list[dict[str, Any]]) -> pd.DataFrame:
    with tempfile.TemporaryDirectory() as folder:
        write_rows(rows, Path(folder) / "run.parquet")
        return load_results(folder).frame


def test_two_rankings_and_where_the_order_differs() -> None:
    rows = run_rows(BASE, stages=STAGES)
    [ranking] = decoder_rankings(frame_of(rows))
    assert (ranking.loader, ranking.pipeline, ranking.batch_size) == (
        "torch-dataloader",
        "albumentations/numpy:train-classification",
        32,
    )
    # one thread: JPEG from memory on one thread, full size (the reduced rows are left out)
    assert list(ranking.single["decoder"]) == [
        "simplejpeg/decode",
        "opencv/imdecode-rgb",
        "opencv/imdecode-cvtcolor",
        "pillow/open-convert",
    ]
    assert list(ranking.single["rank"]) == [1, 2, 3, 4]
    # in the loader: best over worker counts; the AU row and the common default (torchvision
    # augmentation) are other pipelines, the threads loader another loader
    loader = ranking.in_loader.set_index("decoder")
    assert list(loader.index) == [
        "opencv/imdecode-rgb",
        "opencv/imdecode-cvtcolor",
        "pillow/open-convert",
        "simplejpeg/decode",
    ]
    assert ranking.worker_counts == [0, 1, 2, 4]  # opencv's rows are the worker sweep's
    assert set(loader["best_workers"]) == {2}
    frame = pd.DataFrame(rows)
    simplejpeg = frame[frame["params_json"].str.contains('"decoder": "simplejpeg/decode"')]
    by_workers = dict(zip(simplejpeg["workers"], simplejpeg["images_per_s_median"], strict=True))
    assert loader.loc["simplejpeg/decode", "1 worker"] == pytest.approx(by_workers[1])
    assert loader.loc["simplejpeg/decode", "best_images_per_s"] == pytest.approx(
        max(by_workers.values())
    )
    assert pd.isna(loader.loc["simplejpeg/decode", "4 workers"])
    assert set(SUPPLY_IPS) <= set(loader.index)
    best = ranking.differences["best over worker counts"]
    assert "simplejpeg/decode: 1st on one thread, 4th in the loader" in best
    # opencv/imdecode-rgb overtakes simplejpeg only: they tie on one thread (within the noise)
    assert "opencv/imdecode-rgb: 2nd on one thread, 1st in the loader" not in " ".join(best)
    assert (
        "opencv/imdecode-rgb: 2nd on one thread, 1st in the loader (ties with simplejpeg/decode)"
        in ranking.ties["best over worker counts"]
    )
    assert "4 workers" not in ranking.differences  # one decoder there: no order
    assert ranking.summary().startswith("The order of the 4 decoders differs")


def test_same_order_is_said_and_no_supply_no_ranking() -> None:
    assert decoder_rankings(frame_of(run_rows(BASE, stages=("read", "loader")))) == []
    # make simplejpeg the fastest in the loader too: 0 workers now keeps one thread's order
    rows = run_rows(BASE, stages=STAGES)
    for row in rows:
        if '"decoder": "simplejpeg/decode"' in row["params_json"] and row["stage"] == "loader":
            row["images_per_s_median"] *= 4
    [ranking] = decoder_rankings(frame_of(rows))
    assert ranking.in_loader["decoder"].iloc[0] == "simplejpeg/decode"
    assert ranking.differences["0 workers"] == []


def test_the_overview_chooses_a_supply_row() -> None:
    """The answer reads every loader row: a decoder of the supply can be the recommendation."""
    rows = run_rows(BASE, stages=STAGES)
    supply = [r for r in rows if '"decoder": "simplejpeg/decode"' in r["params_json"]]
    fastest = max(supply, key=lambda r: r["images_per_s_median"])["case_id"]
    [answer] = answers(frame_of(slow_down(rows, fastest, 0.2)))
    assert answer.best is not None and answer.best.case_id == fastest
    assert answer.best.configuration.decoder == "simplejpeg/decode"


def test_report_shows_both_tables(tmp_path: Path) -> None:
    write_rows(run_rows(BASE, stages=STAGES), tmp_path / "run.parquet")
    result = CliRunner().invoke(app, ["report", "--results", str(tmp_path), "--markdown"])
    assert result.exit_code == 0, result.stdout
    out = result.stdout
    assert "### Decoders: one thread vs inside the loader · ci-box" in out
    figure = r"[\d,]+ \([\d,]+-[\d,]+\)"
    assert re.search(rf"\| 1 \| simplejpeg/decode \| {figure} \| fastest \|", out)  # one thread
    assert re.search(rf"\| 4 \| simplejpeg/decode \| {figure} \| 2 \| [\d.]+x slower", out)
    assert (
        "| rank | decoder | best | at workers | vs the fastest | 0 workers | 1 worker | 2 workers |"
        in out
    )
    assert "simplejpeg/decode: 1st on one thread, 4th in the loader" in out
    html = tmp_path / "report.html"
    result = CliRunner().invoke(app, ["report", "--results", str(tmp_path), "--out", str(html)])
    assert result.exit_code == 0, result.stdout
    page = html.read_text()
    assert "<h3>One thread</h3>" in page and "<h3>Inside the loader</h3>" in page
    assert "simplejpeg/decode: 1st on one thread, 4th in the loader" in page
    assert re.search(r"<td>[\d,]+ \([\d,]+-[\d,]+\)</td><td>fastest</td>", page)
