"""``Measured.system``: the system a user picks, from the row's ``system`` column; results written
before the column (or with null there) name it by the row's library."""

from __future__ import annotations

import json
from datetime import timedelta

from imgbench.answer import answers
from tests.final.frames import common_default, frame_of, loader_row


def _rows(dali: str | None, spdl: str | None) -> list[dict[str, object]]:
    return [
        loader_row("reader", "dali", 800, system=dali),
        loader_row("sub", "spdl-subprocess", 700, system=spdl),
        common_default(0, 250, system=None),
        common_default(2, 410, system=None),
    ]


def test_system_comes_from_the_column_else_the_library() -> None:
    (answer,) = answers(frame_of(_rows("DALI", "SPDL")))
    systems = {m.case_id: m.system for m in answer.candidates}
    assert systems["loader/dali/reader"] == "DALI"
    assert systems["loader/spdl-subprocess/sub"] == "SPDL"  # a variant's library, one system
    # null in the column: the library
    assert systems["loader/torch-dataloader/pillow-torchvision-0w"] == "torch-dataloader"
    # no column at all (older results)
    (older,) = answers(frame_of(_rows("DALI", "SPDL"), system_column=False))
    assert {m.case_id: m.system for m in older.candidates} == {
        m.case_id: m.configuration.loader for m in older.candidates
    }


def test_a_final_row_without_the_column_keeps_its_matrix_rows_system() -> None:
    rows = _rows("DALI", "SPDL")
    matrix = rows[0]
    final = {
        **matrix,
        "stage": "final",
        "case_id": "final::" + str(matrix["case_id"]),
        "system": None,
        "created_utc": matrix["created_utc"] + timedelta(minutes=5),  # type: ignore[operator]
        "extra_json": json.dumps({"matrix_case_id": matrix["case_id"]}),
    }
    (answer,) = answers(frame_of([*rows, final]))
    assert answer.final_rounds is not None
    from_final = [m for m in answer.candidates if m.source == "final"]
    assert [(m.matrix_case_id, m.system) for m in from_final] == [("loader/dali/reader", "DALI")]
