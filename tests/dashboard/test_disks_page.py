"""The Formats page names the disk its rows read and shows iostat's figures beside images/s."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from streamlit.testing.v1 import AppTest

from imgbench.results.store import write_rows
from tests.dashboard.conftest import texts
from tests.report.test_disks import NEWEST, _rows_on_disks


def test_formats_page_shows_the_disk(open_app: Callable[..., AppTest], tmp_path: Path) -> None:
    folder = tmp_path / "results"
    folder.mkdir()
    write_rows(_rows_on_disks(), folder / f"{NEWEST.run_id}.parquet")
    at = open_app(folder, "formats")
    assert "sdb1 (partition, rotational, ST4000DM004, ext4 rw,relatime)" in texts(at, "caption")
    tables = [d.value for d in at.dataframe if "%util" in d.value.columns]
    assert len(tables) == 1 and set(tables[0]["%util"]) == {"97.0"}
