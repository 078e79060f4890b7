"""lab/stability.py compares each alone session with the suite session just before it."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pandas as pd
import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "lab" / "stability.py"


@pytest.fixture(scope="module")
def stability() -> ModuleType:
    spec = importlib.util.spec_from_file_location("stability", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_pairs_cancel_a_drift_that_medians_would_report(stability: ModuleType) -> None:
    # the host got 30% faster halfway; alone is 2% slower than the suite in every pair
    inside = pd.DataFrame({0: [100.0, 50.0], 1: [100.0, 50.0], 2: [130.0, 65.0], 3: [130.0, 65.0]},
                          index=["read/a", "format/b"])  # fmt: skip
    alone = pd.DataFrame({0: [98.0], 1: [98.0], 2: [127.4], 3: [127.4]}, index=["read/a"])
    result = stability.paired(alone, inside)
    assert list(result.index) == ["read/a"]
    assert result.loc["read/a", "paired_change"] == pytest.approx(-0.02)
    # the same four sessions, without the first two alone ones, as the old script compared them
    late = stability.paired(alone[[2, 3]], inside)
    assert late.loc["read/a", "paired_change"] == pytest.approx(-0.02)
    assert late.loc["read/a", "alone"] / inside.loc["read/a"].median() - 1 > 0.1  # unpaired: +10%


def test_one_case_per_stage_in_suite_order(stability: ModuleType) -> None:
    cases = pd.Index(["read/x", "read/y", "augment/z", "loader/w"])
    assert stability.chosen_cases(cases) == ["read/x", "augment/z", "loader/w"]
    cases = pd.Index(
        ["read/x", "format/f[mode=write]", "format/f[mode=read]", "format/g[mode=read]"]
    )
    assert stability.chosen_cases(cases) == [
        "read/x",
        "format/f[mode=write]",
        "format/f[mode=read]",
    ]


def test_a_sessions_host_ratio_is_the_median_case_and_ignores_failed_rows(
    stability: ModuleType, tmp_path: Path
) -> None:
    rows = pd.DataFrame(
        {
            "status": ["ok", "ok", "ok", "failed"],
            "host_ratios": [[1.0, 1.1, 1.2], [1.5, 1.5], [1.3], [9.0]],
        }
    )
    rows.to_parquet(tmp_path / "run.parquet")
    assert stability.host_ratio(tmp_path / "run.parquet") == pytest.approx(1.3)
