"""Results folders for the dashboard tests, and reading the data behind its charts."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest
from streamlit.testing.v1 import AppTest

from tests.dashboard.fixtures import (
    standard_runs,
    write_allocator_run,
    write_corrupt,
    write_old_schema,
    write_run,
)

APP = Path(__file__).resolve().parents[2] / "dashboard" / "app.py"
PAGES = ["overview", "readers", "augment", "formats", "loaders", "compare", "explorer"]


@pytest.fixture(scope="session")
def standard_results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A baseline run and a 15% slower candidate, every stage, same machine and data."""
    folder = tmp_path_factory.mktemp("standard")
    for spec in standard_runs():
        write_run(folder, spec)
    return folder


@pytest.fixture(scope="session")
def read_only_results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What exists today: only the read stage (and skipped/failed rows)."""
    folder = tmp_path_factory.mktemp("read-only")
    write_run(folder, standard_runs()[0], stages=("read", "outcome"))
    return folder


@pytest.fixture(scope="session")
def allocator_results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One `imgbench run --profile default`: the main session under glibc and three allocator
    sessions (glibc-tuned, jemalloc, tcmalloc) re-measuring a few cases."""
    folder = tmp_path_factory.mktemp("allocators")
    write_allocator_run(folder)
    return folder


@pytest.fixture(scope="session")
def damaged_results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A good run, an older-schema run and a half-written file."""
    folder = tmp_path_factory.mktemp("damaged")
    base, cand = standard_runs()
    write_run(folder, cand)
    write_old_schema(folder, replace(base, run_id="20260101T000000Z-old-schema"))
    write_corrupt(folder)
    return folder


@pytest.fixture(scope="package")
def profile_results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two real `imgbench profile` runs beside a benchmark run: read by the "Your pipeline" page's
    tests, in AppTest (test_profile_page.py) and in Chromium (test_browser.py)."""
    import imgbench
    from tests.profiling.pipelines import faulty

    folder = tmp_path_factory.mktemp("profile-results")
    write_run(folder, standard_runs()[1])  # a benchmark run, older than the profile runs
    quick = {"seconds": 0.3, "au_seconds": 0.2, "compare_readers": False, "results": folder}
    imgbench.profile(faulty.Numbers(64), workers=[0, 1], batch_size=8, sample_seconds=1.5, **quick)
    imgbench.profile(faulty.raises_on_3(), workers=[0], batch_size=2, sample_seconds=0, **quick)
    return folder


def _run_app(results: Path, page: str) -> AppTest:
    """The app run on ``results`` (via $IMGBENCH_RESULTS, as set while it runs), on ``page``."""
    before = os.environ.get("IMGBENCH_RESULTS")
    os.environ["IMGBENCH_RESULTS"] = str(results)
    try:
        at = AppTest.from_file(str(APP), default_timeout=120)
        if page != "overview":  # straight to the page: one app run (the overview's first run
            at.switch_page(f"views/{page}.py")  # cost 0.4-0.5 s of each page's 0.7-0.8 s)
        at.run()
    finally:
        if before is None:
            del os.environ["IMGBENCH_RESULTS"]
        else:
            os.environ["IMGBENCH_RESULTS"] = before
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.fixture
def open_app(monkeypatch: pytest.MonkeyPatch) -> Callable[..., AppTest]:
    """Run the app on a results folder (via $IMGBENCH_RESULTS), optionally on one page: a fresh
    app, for a test that sets widgets."""

    def run(results: Path, page: str = "overview") -> AppTest:
        monkeypatch.setenv("IMGBENCH_RESULTS", str(results))
        return _run_app(results, page)

    return run


@pytest.fixture(scope="session")
def shown_app() -> Callable[..., AppTest]:
    """``open_app`` for tests that only read what a page shows: each (folder, page) runs once
    per session and every such test reads that run (an app run is ~1 s; the standard folder's
    pages were opened by up to four tests each). Never set a widget on what it returns."""
    runs: dict[tuple[Path, str], AppTest] = {}

    def run(results: Path, page: str = "overview") -> AppTest:
        if (results, page) not in runs:
            runs[results, page] = _run_app(results, page)
        return runs[results, page]

    return run


def chart_specs(at: AppTest) -> list[dict[str, Any]]:
    return [json.loads(chart.proto.spec) for chart in at.get("vega_lite_chart")]


def chart_data(at: AppTest, index: int, column: str) -> pd.DataFrame:
    """The dataset of chart ``index`` that has ``column``, as Streamlit sent it to the browser."""
    chart = at.get("vega_lite_chart")[index]
    payloads = [d.data.data for d in chart.proto.datasets] or [chart.proto.data.data]
    for payload in payloads:
        frame = pa.ipc.open_stream(payload).read_pandas()
        if column in frame.columns:
            return frame
    raise AssertionError(f"chart {index} has no dataset with column {column!r}")


def chart_with(at: AppTest, column: str) -> pd.DataFrame | None:
    """The dataset of the first chart that has ``column``, or None when no chart has it."""
    for index in range(len(at.get("vega_lite_chart"))):
        try:
            return chart_data(at, index, column)
        except AssertionError:
            continue
    return None


def texts(at: AppTest, kind: str) -> str:
    return "\n".join(str(e.value) for e in getattr(at, kind))
