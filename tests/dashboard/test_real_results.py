"""The dashboard on real results: every stage's quick bench, then every page, no exception."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import run_pytest
from tests.dashboard.conftest import PAGES

BENCHES = Path(__file__).resolve().parents[2] / "benches"


@pytest.fixture(scope="module")
def real_results(tmp_path_factory: pytest.TempPathFactory, tiny_dataset: Path) -> Path:
    out = tmp_path_factory.mktemp("real-results")
    proc = run_pytest(
        [
            str(BENCHES),
            f"--dataset={tiny_dataset}",
            "--imgbench-profile=quick",
            "--imgbench-rounds=2",
            f"--imgbench-results={out}",
        ],
        cwd=out,
        timeout=900,
    )
    assert proc.returncode in (0, 1), proc.stdout[-3000:] + proc.stderr[-2000:]
    return out


def test_quick_bench_covers_every_stage(real_results: Path) -> None:
    (path,) = real_results.glob("*.parquet")
    frame = pd.read_parquet(path)
    ok = frame[frame.status == "ok"]
    assert {"read", "augment", "format", "loader"} <= set(ok["stage"])


@pytest.mark.parametrize("page", PAGES)
def test_every_page_renders_real_results(open_app, real_results: Path, page: str) -> None:
    at = open_app(real_results, page)  # asserts that no exception is shown
    if page in ("overview", "readers", "augment", "formats", "loaders"):
        assert at.get("vega_lite_chart"), f"{page}: no chart on real results"
