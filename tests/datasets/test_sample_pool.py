"""The images a case times are a seeded sample that stands for the dataset, not its first files.

On real folders built here: a synthetic ImageNet-like set (sizes with a long tail; the package's
``imagenet_like`` fixture, tests/datasets/conftest.py) and a folder sorted by class whose classes differ in image size, where the first files are one class's.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from imgbench.controls import case_context, resolve
from imgbench.datasets import Dataset, ImageEntry, load_dataset
from imgbench.datasets.sample_pool import TOLERANCE, draw, order_populations
from imgbench.formats.session import target_path
from imgbench.measure.manager import Manager
from imgbench.measure.rounds import Measurement
from imgbench.measure.rows import RunHeader, case_listing, case_row, summary_lines
from imgbench.profiles import ProfileChoice, get_profile
from imgbench.results.store import rows_table
from imgbench.stages import planner, session_cases
from tests.conftest import write_photo_like

QUICK = get_profile("quick")
# class k's images are about 4**k times class 0's pixels: its first files are the smallest
CLASS_SIZES = ((48, 36), (96, 72), (192, 144), (384, 288))
PER_CLASS = 10


@pytest.fixture(scope="module")
def by_class(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Four class folders of JPEGs at very different sizes (a little jitter inside a class)."""
    root = tmp_path_factory.mktemp("by-class")
    for k, (w, h) in enumerate(CLASS_SIZES):
        for i in range(PER_CLASS):
            grow = 1 + 0.04 * (i % 5)
            size = (round(w * grow), round(h * grow))
            write_photo_like(root / f"class_{k}" / f"{i:03d}.jpg", size, seed=10 * k + i)
    return root


def _means(entries: list[ImageEntry]) -> tuple[float, float]:
    return (
        sum(e.megapixels for e in entries) / len(entries),
        sum(e.bytes for e in entries) / len(entries),
    )


def _within(entries: list[ImageEntry], everything: list[ImageEntry]) -> bool:
    (mp, size), (all_mp, all_size) = _means(entries), _means(everything)
    return abs(mp / all_mp - 1) <= TOLERANCE and abs(size / all_size - 1) <= TOLERANCE


@pytest.mark.parametrize("folder", ["by_class", "imagenet_like"])
def test_the_sample_has_the_datasets_means_where_the_first_files_do_not(
    folder: str, request: pytest.FixtureRequest
) -> None:
    dataset = load_dataset(str(request.getfixturevalue(folder)), progress=False)
    everything = dataset.manifest.entries
    ctx = case_context(dataset, QUICK, max_images=8)
    sample = ctx.sample()
    entries = ctx.entries()
    assert entries == list(sample.entries) and len(entries) >= 8
    assert _within(entries, everything), sample.note()
    assert sample.within_tolerance and sample.note() is None
    assert (sample.population_mean_megapixels, sample.population_mean_bytes) == pytest.approx(
        _means(everything)
    )
    labels = {e.label for e in entries}
    assert labels == {e.label for e in everything}  # every class is in it
    if folder == "by_class":  # the first files are class 0's, the smallest
        assert not _within(everything[:8], everything)
        assert {e.label for e in everything[:8]} == {"class_0"}


def test_the_same_sample_in_every_context_and_process(by_class: Path) -> None:
    """Worker forks and spawned processes re-plan a case and draw its sample again: the same
    images in the same order (string hashing randomised differently in the child)."""
    dataset = load_dataset(str(by_class), progress=False)
    first = case_context(dataset, QUICK, max_images=8).sample()
    second = case_context(load_dataset(str(by_class), progress=False), QUICK, max_images=8)
    assert second.entries() == list(first.entries)
    assert second.sample().identity == first.identity
    code = (
        "import json, sys\n"
        "from imgbench.datasets import load_dataset\n"
        "from imgbench.datasets.sample_pool import draw\n"
        "d = load_dataset(sys.argv[1], progress=False)\n"
        "s = draw(d.manifest.entries, 8, seed=0, cap=128)\n"
        "print(json.dumps([s.identity, [e.path for e in s.entries]]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(by_class)],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONHASHSEED": "12345", "PATH": "/usr/bin:/bin"},
        cwd=Path(__file__).resolve().parents[2],
    )
    identity, paths = json.loads(out.stdout)
    assert identity == first.identity and paths == [e.path for e in first.entries]
    # what is built from the sample is named by it (a worker finds the store another built)
    try:
        assert target_path(second, "tar").name.endswith(f"-{first.identity}")
    finally:
        second.close()
    # another seed is another sample, recorded as such
    other = case_context(dataset, QUICK, max_images=8, sample_seed=7).sample()
    assert other.seed == 7 and other.identity != first.identity


def test_a_codec_filtered_sample_is_drawn_from_that_codecs_images(tiny_dataset: Path) -> None:
    dataset = load_dataset(str(tiny_dataset), progress=False)
    ctx = case_context(dataset, QUICK, max_images=4)
    jpegs = [e for e in dataset.manifest.entries if e.codec == "jpeg"]
    sample = ctx.sample("jpeg")
    assert {e.codec for e in sample.entries} == {"jpeg"} and sample.population == len(jpegs)
    assert sample.codec == "jpeg" and _within(list(sample.entries), jpegs)
    assert sample.population_mean_bytes == pytest.approx(_means(jpegs)[1])
    pngs = ctx.entries("png")  # two PNGs, fewer than asked: all of them
    assert sorted(e.path for e in pngs) == sorted(
        e.path for e in dataset.manifest.entries if e.codec == "png"
    )
    assert ctx.entries("webp") == []
    # ordered once (the worker server, before it forks): the same samples come out
    order_populations(dataset.manifest.entries)
    assert draw(dataset.manifest.entries, 4, codec="jpeg", cap=128).identity == sample.identity


def test_the_sample_grows_only_when_needed_and_says_when_the_cap_misses() -> None:
    """One giant among small images: no 4 of them stand for all 40; 20 do."""

    def entry(i: int, side: int) -> ImageEntry:
        return ImageEntry(f"c/{i:03d}.jpg", side * side // 4, "jpeg", side, side, "RGB", "c", "")

    entries = [entry(i, 100 + i) for i in range(39)] + [entry(39, 2000)]
    grown = draw(entries, 4, cap=40)
    assert grown.within_tolerance and len(grown.entries) > 4 and grown.asked == 4
    capped = draw(entries, 4, cap=8)
    assert len(capped.entries) == 8 and not capped.within_tolerance
    note = capped.note() or ""
    assert "(the cap)" in note and "sample_max_images" in note
    # the session's closing summary says it once, however many rows drew that sample
    rows = [{"status": "ok", "reason": None, "extra_json": json.dumps({"sample": note})}] * 2
    assert summary_lines(rows, None, "results")[0] == f"sample: {note}"
    plain = [entry(i, 100) for i in range(40)]
    assert len(draw(plain, 4, cap=40).entries) == 4  # every image alike: 4 suffice


def test_a_measured_row_records_the_sample_and_the_dataset(by_class: Path) -> None:
    """A reader case measured in a worker fork: its row carries the sample it timed, the means
    of both and the seed, and the row fits the schema."""
    choice = ProfileChoice("quick")
    settings = resolve(
        choice.resolve(),
        {
            "rounds": 2,
            "warmup_rounds": 0,
            "min_round_s": 0.0,
            "host_max_ratio": 0.0,
            "max_images": 8,
            "worker_imports": "selected",
        },
    )
    case = next(
        c
        for c in session_cases("read", choice, settings)
        if (c.library, c.params.get("codec"), c.params.get("mode")) == ("pillow", "jpeg", "memory")
        and c.threads == 1
    )
    manager = Manager(settings, planner(choice), str(by_class))
    try:
        outcome = manager.measure(case)
        assert isinstance(outcome, Measurement), outcome
        dataset = manager.context().dataset
        expected = manager.context().sample("jpeg")
    finally:
        manager.close()
    row = case_row(
        RunHeader("run", None, "run"),
        case_listing("test", case),
        case,
        outcome,
        "ok",
        None,
        1.0,
        dataset,
        columns=outcome.columns,
        settings=settings,
    )
    _check_row(row, dataset, expected.identity)
    rows_table([row])  # every value fits its column's type


def _check_row(row: dict, dataset: Dataset, identity: str) -> None:
    entries = dataset.manifest.entries
    mp, size = _means(entries)
    assert row["sample_id"] == identity and row["sample_seed"] == 0
    assert row["sample_images"] == 8 and row["sample_max_images"] == 128
    assert row["dataset_mean_megapixels"] == pytest.approx(mp)
    assert row["dataset_mean_bytes"] == pytest.approx(size)
    assert row["sample_population_mean_megapixels"] == pytest.approx(mp)
    assert abs(row["sample_mean_megapixels"] / mp - 1) <= TOLERANCE
    assert abs(row["sample_mean_bytes"] / size - 1) <= TOLERANCE
    assert "sample" not in json.loads(row["extra_json"])  # no note: within the tolerance
