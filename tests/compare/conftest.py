"""Real recorded runs of the quick reader bench, and helpers to derive sides from them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from imgbench.results.store import load_results, write_rows

DATA = Path(__file__).parent / "data"
AA_RUNS = DATA / "aa_runs.parquet"  # consecutive real runs of the same code (see data/README.md)


@pytest.fixture(scope="session")
def aa_frame() -> pd.DataFrame:
    return load_results(AA_RUNS).frame


@pytest.fixture
def one_run(aa_frame: pd.DataFrame) -> pd.DataFrame:
    first = sorted(aa_frame["run_id"].unique())[0]
    return aa_frame[aa_frame["run_id"] == first].reset_index(drop=True)


def slowed(frame: pd.DataFrame, case_id: str, factor: float) -> pd.DataFrame:
    """A copy whose round times (and derived metrics) for one case are ``factor`` times longer."""
    out = frame.copy()
    mask = out["case_id"] == case_id
    out.loc[mask, "samples_s"] = out.loc[mask, "samples_s"].apply(
        lambda s: np.asarray(s, dtype=float) * factor
    )
    for metric in ("images_per_s_median", "mb_per_s_median", "megapixels_per_s_median"):
        out.loc[mask, metric] = out.loc[mask, metric] / factor
    for metric in ("latency_ms_median", "latency_ms_p90", "latency_ms_p99"):
        out.loc[mask, metric] = out.loc[mask, metric] * factor
    out["run_id"] = "slowed-" + out["run_id"]
    return out


def save(frame: pd.DataFrame, path: Path) -> Path:
    rows = frame.to_dict("records")
    for row in rows:
        row["samples_s"] = (
            [float(x) for x in row["samples_s"]] if row["samples_s"] is not None else None
        )
        for key, value in list(row.items()):
            if value is pd.NA or (isinstance(value, float) and np.isnan(value)):
                row[key] = None
    write_rows(rows, path)
    return path
