"""The Overview gives each task beyond classification its own short answer, apart from the main
one."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from streamlit.testing.v1 import AppTest

from imgbench.results.store import write_rows
from tests.answer.test_answer import BASE
from tests.answer.test_task_answers import _task_rows
from tests.dashboard.conftest import texts
from tests.dashboard.fixtures import run_rows


def test_the_overview_answers_each_task_apart(
    open_app: Callable[..., AppTest], tmp_path: Path
) -> None:
    rows = run_rows(BASE)
    folder = tmp_path / "results"
    folder.mkdir()
    write_rows(rows + _task_rows(rows, "crop-ocr", 100.0), folder / "r1.parquet")
    at = open_app(folder)
    assert "Other tasks" in [h.value for h in at.subheader]
    shown = texts(at, "markdown")
    assert "**crop-ocr:" in shown
    # the crop-ocr rows (100x faster) appear in their own answer only, not in the main one's
    mentions = [str(m.value) for m in at.markdown if "(crop-ocr)" in str(m.value)]
    assert mentions and all(m.startswith("- **crop-ocr:") for m in mentions)
