"""The Overview says, per measured disk, the pick and whether packing pays off, and shows the
emulated HDD's cold images/s over the real disk's."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from streamlit.testing.v1 import AppTest

from tests.dashboard.conftest import texts
from tests.loaders.test_advise_disks import _results


def test_the_overview_says_it_too(open_app: Callable[..., AppTest], tmp_path: Path) -> None:
    at = open_app(_results(tmp_path))
    shown = texts(at, "markdown")
    assert "On the emulated hdd disk packing pays off (lmdb)" in shown
    ratios = [d.value for d in at.dataframe if "hdd/real" in d.value.columns]
    assert len(ratios) == 1 and list(ratios[0]["format"]) == ["folder", "lmdb"]
