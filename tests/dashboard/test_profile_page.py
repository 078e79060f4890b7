"""The "Your pipeline" page on real `imgbench profile` rows (tests/dashboard/conftest.py's
``profile_results``), beside a benchmark run; the same page in Chromium is in test_browser.py."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from tests.dashboard.conftest import chart_data


def sampling_of(results: Path) -> list[dict[str, object]]:
    """What py-spy did in each profile row: the evidence for a missing attribution."""
    rows = pd.concat(pd.read_parquet(f) for f in sorted(results.glob("*.parquet")))
    keys = ("attribution_samples", "attribution_wait_samples", "attribution_start_s")
    out = []
    for _, row in rows[rows["stage"] == "profile"].iterrows():
        extra = json.loads(row["extra_json"] or "{}")
        out.append({"workers": row["workers"], **{k: extra.get(k) for k in keys}})
        out[-1]["error"] = extra.get("attribution_error")
    return out


def test_profile_rows_show_their_sweep_and_attribution(open_app, profile_results: Path) -> None:
    at = open_app(profile_results)
    preselected = at.multiselect(key="filter_run").value
    assert preselected and not any("profile" in run for run in preselected)  # the bench run
    at.switch_page("views/profile.py").run()
    assert not at.exception, [e.value for e in at.exception]
    table = at.dataframe[0].value
    ok = table[table["status"] == "ok"]
    assert sorted(ok["workers"]) == [0, 1] and (ok["images/s"] > 0).all()
    assert (ok["AU, %"] > 0).all() and (ok["peak PSS, MiB"] > 0).all()
    failed = table[table["status"] == "failed"]
    assert len(failed) == 1 and "dataset[3] raised" in failed["reason"].item()
    shares = chart_data(at, 0, "share")
    sampled = {c.split(" · ")[-1] for c in shares["config"]}
    assert sampled == {"0 workers", "1 workers"}, sampling_of(profile_results)
    for _, part in shares.groupby("config"):
        assert part["share"].sum() == pytest.approx(1, abs=0.01)
    assert "collate/IPC" in set(shares["category"])
