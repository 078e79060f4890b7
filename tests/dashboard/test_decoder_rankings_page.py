"""The Readers page: decoders ranked on one thread beside inside the loader, and where the
order differs (the tables imgbench report shows too)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from streamlit.testing.v1 import AppTest

from tests.dashboard.conftest import texts
from tests.dashboard.fixtures import standard_runs, write_run


def test_readers_page_ranks_decoders_both_ways(
    open_app: Callable[..., AppTest], tmp_path: Path
) -> None:
    write_run(tmp_path, standard_runs()[0], stages=("read", "native", "loader", "supply"))
    at = open_app(tmp_path, "readers")
    assert "One thread vs inside the loader" in texts(at, "subheader")
    frames = [d.value for d in at.dataframe]
    single = next(f for f in frames if "images/s (95% interval)" in f.columns)
    loader = next(f for f in frames if "best" in f.columns)
    assert single["decoder"].iloc[0] == "simplejpeg/decode"
    assert single["vs the fastest"].iloc[0] == "fastest"
    assert re.fullmatch(r"[\d,]+ \([\d,]+-[\d,]+\)", single["images/s (95% interval)"].iloc[0])
    assert loader["decoder"].iloc[-1] == "simplejpeg/decode"
    assert re.fullmatch(r"[\d.]+x slower \([\d.]+-[\d.]+x\)", loader["vs the fastest"].iloc[-1])
    assert {"0 workers", "1 worker", "2 workers"} <= set(loader.columns)
    page = texts(at, "markdown")
    assert "The order of the 4 decoders differs" in page
    assert "simplejpeg/decode: 1st on one thread, 4th in the loader" in page


def test_readers_page_without_a_supply_says_how(
    open_app: Callable[..., AppTest], read_only_results: Path
) -> None:
    at = open_app(read_only_results, "readers")
    assert any("LoaderPlan.supply_decoders" in str(i.value) for i in at.info)
