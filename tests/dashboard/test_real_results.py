"""The dashboard on real results: every stage's quick bench, then every page, no exception."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from tests.dashboard.conftest import PAGES
from tests.shared_runs import SessionRun


@pytest.fixture(scope="module")
def real_results(quick_session: SessionRun) -> Path:
    """The test session's one quick run of every stage (tests/shared_runs.py)."""
    assert quick_session.returncode in (0, 1), quick_session.output
    return quick_session.results


def test_quick_bench_covers_every_stage(real_results: Path) -> None:
    (path,) = real_results.glob("*.parquet")
    frame = pd.read_parquet(path)
    ok = frame[frame.status == "ok"]
    assert {"read", "augment", "format", "loader"} <= set(ok["stage"])
    # the session the tests started inherited the suite's settings: the host gate off
    # (tests/conftest.py; no re-timed rounds in correctness runs)
    assert (ok["host_max_ratio"] == 0).all() and (ok["worker_imports"] == "selected").all()


@pytest.mark.parametrize("page", PAGES)
def test_every_page_renders_real_results(open_app, real_results: Path, page: str) -> None:
    at = open_app(real_results, page)  # asserts that no exception is shown
    if page in ("overview", "readers", "augment", "formats", "loaders"):
        assert at.get("vega_lite_chart"), f"{page}: no chart on real results"
