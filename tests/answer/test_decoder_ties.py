"""The decoder rankings say ties (imgbench.answer.decoders): each figure carries its 95% interval,
decoders whose rounds overlap tie, and a change of place between decoders that tie is within the
noise, not an order that differs. Rows are built here with their timed rounds (no session)."""

from __future__ import annotations

import json
import re
import statistics
import tempfile
from datetime import UTC, datetime
from pathlib import Path

import pytest

from imgbench.answer.decoders import VERSUS, DecoderRanking, decoder_rankings
from imgbench.report.markdown import decoder_tables
from imgbench.results.schema import empty_row
from imgbench.results.store import load_results, write_rows

IMAGES = 64
# each timed round's time over the median round's: a few percent of spread, as a quiet host gives
ROUNDS = (0.97, 0.98, 0.99, 0.995, 1.0, 1.0, 1.005, 1.01, 1.02, 1.03)
PIPELINE = "albumentations/numpy:train-classification"
BEST, TWO = "best over worker counts", "2 workers"
FIGURE = re.compile(r"[\d,]+ \([\d,]+-[\d,]+\)")


def _row(stage: str, decoder: str, ips: float, params: dict[str, object]) -> dict[str, object]:
    library, variant = decoder.split("/")
    samples = [IMAGES / ips * f for f in ROUNDS]
    row = empty_row()
    row.update(
        run_id="run-ties",
        created_utc=datetime(2026, 11, 27, 10, 0, tzinfo=UTC),
        status="ok",
        stage=stage,
        library=library if stage == "read" else "torch-dataloader",
        variant=variant if stage == "read" else f"files-{library}.{variant}-albumentations",
        machine_id="machine-ties",
        hostname="ties-box",
        dataset_name="synthetic",
        dataset_fingerprint="fp-ties",
        codec="jpeg",
        mode="memory" if stage == "read" else "disk",
        workers=params.get("workers"),
        samples_s=samples,
        images_per_round=IMAGES,
        images_per_s_median=IMAGES / statistics.median(samples),
        params_json=json.dumps(params, sort_keys=True),
        case_id=f"{stage}/{decoder}",
    )
    return row


def ranking_of(single: dict[str, float], loader: dict[str, float]) -> DecoderRanking:
    """One thread's images/s per decoder, and in the DataLoader at 2 workers."""
    rows = [
        _row("read", d, ips, {"codec": "jpeg", "mode": "memory", "threads": 1})
        for d, ips in single.items()
    ]
    rows += [
        _row(
            "loader",
            d,
            ips,
            {"workers": 2, "batch_size": 32, "format": "files", "pipeline": PIPELINE, "decoder": d},
        )
        for d, ips in loader.items()
    ]
    with tempfile.TemporaryDirectory() as folder:
        write_rows(rows, Path(folder) / "run.parquet")
        frame = load_results(folder).frame
    [ranking] = decoder_rankings(frame)
    return ranking


def test_overlapping_rounds_tie_far_apart_do_not() -> None:
    ranking = ranking_of(
        {"a/x": 1000.0, "b/x": 990.0, "c/x": 700.0}, {"a/x": 500.0, "b/x": 495.0, "c/x": 300.0}
    )
    single = ranking.single.set_index("decoder")
    assert list(single.index) == ["a/x", "b/x", "c/x"]
    # the figure inside its interval, widened beyond the rounds' own spread (2% read CV)
    low, high = single.loc["a/x", "images_per_s low"], single.loc["a/x", "images_per_s high"]
    assert low < 1000.0 * 0.97 < 1000.0 < 1000.0 * 1.03 < high
    assert single[VERSUS].tolist()[:2] == ["fastest", "tie"]
    slower = re.fullmatch(
        r"(\d\.\d\d)x slower \((\d\.\d\d)-(\d\.\d\d)x\)", single.loc["c/x", VERSUS]
    )
    assert slower is not None
    factor, lo, hi = (float(g) for g in slower.groups())
    assert factor == pytest.approx(1000 / 700, abs=0.01) and 1.0 < lo < factor < hi
    loader = ranking.in_loader.set_index("decoder")
    assert loader[VERSUS].tolist()[:2] == ["fastest", "tie"]
    assert loader.loc["c/x", VERSUS].endswith("x)")
    # the text tables: every figure as "610 (580-640)"
    text = ranking.single_text()
    assert all(FIGURE.fullmatch(cell) for cell in text["images/s (95% interval)"])
    in_loader = ranking.in_loader_text()
    assert all(FIGURE.fullmatch(cell) for cell in [*in_loader["best"], *in_loader[TWO]])
    assert ranking.differences == {BEST: [], TWO: []} and ranking.ties == {BEST: [], TWO: []}
    assert ranking.summary() == "The 3 decoders keep their single-thread order in the loader."


@pytest.mark.parametrize(
    ("single", "loader"),
    [
        # a tie on one thread, apart in the loader
        ({"a/x": 1000.0, "b/x": 990.0, "c/x": 600.0}, {"b/x": 800.0, "a/x": 500.0, "c/x": 300.0}),
        # apart on one thread, a tie in the loader
        ({"a/x": 1000.0, "b/x": 700.0, "c/x": 600.0}, {"b/x": 505.0, "a/x": 500.0, "c/x": 300.0}),
    ],
)
def test_a_swap_between_ties_is_within_the_noise(
    single: dict[str, float], loader: dict[str, float]
) -> None:
    ranking = ranking_of(single, loader)
    assert list(ranking.in_loader["decoder"]) == ["b/x", "a/x", "c/x"]
    assert ranking.differences == {BEST: [], TWO: []}
    assert ranking.ties[TWO] == [
        "b/x: 2nd on one thread, 1st in the loader (ties with a/x)",
        "a/x: 1st on one thread, 2nd in the loader (ties with b/x)",
    ]
    assert "within the noise" in ranking.summary()
    assert ranking.difference_text(TWO).startswith("the same order within the noise (b/x: 2nd")
    markdown = "\n".join(decoder_tables(ranking))
    assert "keep their single-thread order in the loader within the noise" in markdown


def test_a_supported_swap_is_reported() -> None:
    ranking = ranking_of(
        {"a/x": 1000.0, "b/x": 700.0, "c/x": 400.0}, {"b/x": 800.0, "a/x": 500.0, "c/x": 300.0}
    )
    assert ranking.differences[TWO] == [
        "b/x: 2nd on one thread, 1st in the loader",
        "a/x: 1st on one thread, 2nd in the loader",
    ]
    assert ranking.ties[TWO] == []
    assert ranking.summary().startswith("The order of the 3 decoders differs")
    markdown = "\n".join(decoder_tables(ranking))
    assert "| rank | decoder | images/s (95% interval) | vs the fastest |" in markdown
    assert re.search(r"\| 1 \| b/x \| 8\d\d \(\d{3}-\d{3}\) \| 2 \| fastest \| 8\d\d \(", markdown)
    assert "- Where the order differs, 2 workers: b/x: 2nd on one thread, 1st" in markdown
