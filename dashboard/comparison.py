"""The Compare page's verdicts: ``imgbench.compare``, called as ``imgbench compare`` calls it.

One test, not two: the config is the checkout's ``[tool.imgbench.regression]`` with the page's
overrides (as the command line's ``--threshold`` / ``--alpha``), the rows go to
``compare_frames``, and a pair it refuses (other datasets, other machines, no common case) is a
``Refusal`` carrying its reason, shown instead of a verdict. This module holds no statistics.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import streamlit as st

from imgbench.compare import CompareInputError, ComparisonResult, RegressionConfig, compare_frames
from imgbench.compare.config import load_config
from imgbench.compare.machines import FIGURES

# result.rows columns the page's table shows, in order (verdict and gating as imgbench.compare
# set them)
TABLE_COLUMNS = [
    "case_id",
    "stage",
    "metric",
    "verdict",
    "gating",
    "ratio",
    "ci_low",
    "ci_high",
    "baseline",
    "candidate",
    "threshold",
    "p_worse_adjusted",
    "p_better_adjusted",
    "method",
]


@dataclass(frozen=True)
class Refusal:
    """Why ``imgbench compare`` would exit 2 on this pair: the page shows it, no verdict."""

    reason: str


@dataclass(frozen=True)
class Settings:
    """What the page lets one change; each maps to an ``imgbench compare`` option."""

    threshold: float | None = None  # --threshold (None: the config's)
    alpha: float | None = None  # --alpha
    allow_cross_machine: bool = False  # --allow-cross-machine


def page_config(settings: Settings, pyproject: Path | None = None) -> RegressionConfig:
    """The config ``imgbench compare --threshold T --alpha A`` builds (may raise ConfigError)."""
    return load_config(pyproject).with_overrides(threshold=settings.threshold, alpha=settings.alpha)


def compare(
    baseline: pd.DataFrame,
    candidate: pd.DataFrame,
    config: RegressionConfig,
    allow_cross_machine: bool = False,
) -> ComparisonResult | Refusal:
    """``compare_frames`` on the two sides, its refusal turned into a value the page can show."""
    try:
        return compare_frames(baseline, candidate, config, allow_cross_machine=allow_cross_machine)
    except CompareInputError as exc:
        return Refusal(str(exc))


# The bootstrap takes seconds per metric (as long as `imgbench compare`): one computation per
# (rows, config) key, kept across reruns; the frames themselves are not hashed (``_`` prefix).
@st.cache_data(max_entries=16, show_spinner="Comparing the runs with imgbench.compare…")
def cached_compare(
    _baseline: pd.DataFrame,
    _candidate: pd.DataFrame,
    _config: RegressionConfig,
    key: tuple[object, ...],
    allow_cross_machine: bool,
) -> ComparisonResult | Refusal:
    """``compare`` cached on ``key``, which must name the rows and ``repr`` of the config."""
    return compare(_baseline, _candidate, _config, allow_cross_machine)


# the machine comparison's columns (imgbench.compare.machines), as the page's table names them
MACHINE_COLUMNS = {"case_id": "case_id", **FIGURES}


def machine_rows(result: ComparisonResult) -> pd.DataFrame:
    """Per configuration: both rates, the machines' ratio, the reference's prediction of it and
    the share it explains, the least explained first; empty where the runs carry no reference."""
    machines = result.machines
    if machines is None or machines.baseline is None or machines.candidate is None:
        return pd.DataFrame(columns=list(MACHINE_COLUMNS.values()))
    rows = machines.rows.assign(_off=(machines.rows["explained"] - 1).abs())
    rows = rows.sort_values(["_off", "case_id"], ascending=[False, True])
    return rows[list(MACHINE_COLUMNS)].rename(columns=MACHINE_COLUMNS).reset_index(drop=True)


def metric_rows(result: ComparisonResult, metric: str) -> pd.DataFrame:
    """The result's rows of one metric, regressions first, in the table's columns."""
    rows = result.rows[result.rows["metric"] == metric]
    order = rows["verdict"].map({"regressed": 0, "improved": 1}).fillna(2)
    rows = rows.assign(_order=order).sort_values(["_order", "ratio", "case_id"])
    return rows[TABLE_COLUMNS].reset_index(drop=True)


def cli_command(
    baseline_run: str,
    candidate_run: str,
    results: Path | str,
    config: RegressionConfig,
    cross: bool,
) -> str:
    """The command line that gives the same verdicts on the same (unfiltered) rows."""
    words = ["imgbench", "compare", baseline_run, candidate_run, "--results", str(results)]
    words += ["--threshold", f"{config.threshold:g}", "--alpha", f"{config.alpha:g}"]
    if cross:
        words.append("--allow-cross-machine")
    return shlex.join(words)
