"""Each system at its best (imgbench.answer.systems): one line per system from the answer's own
rows, as-documented against same-recipe, tasks apart, older rows without the columns."""

from __future__ import annotations

import json
from typing import Any

import pandas as pd
import pytest

from imgbench.answer import answers, task_answers
from imgbench.answer.systems import (
    AS_DOCUMENTED,
    SAME_RECIPE,
    figure_places,
    figure_text,
    round_figure,
    systems_tables,
    tables_for,
)
from imgbench.report.document import build_report
from imgbench.report.markdown import render_markdown
from imgbench.results.store import LoadedResults
from tests.answer.test_answer import BASE, frame_of
from tests.dashboard.fixtures import run_rows

SYSTEMS = {"torch-dataloader": "DataLoader", "threads": "thread pool"}
NEW_COLUMNS = ["system", "configured_as", "configured_from", "crop_decode"]
DALI_EXAMPLE = "DALI's ResNet-50 example (docs/examples/use_cases/pytorch/resnet50, 1.52)"


def scaled(row: dict[str, Any], factor: float, **updates: Any) -> dict[str, Any]:
    """``row`` ``factor`` times as fast (every round and figure), with ``updates``."""
    out = dict(row)
    out["samples_s"] = [s / factor for s in row["samples_s"]]
    for column in [c for c in row if c.endswith(("_per_s_median", "_per_s_q1", "_per_s_q3"))]:
        if row[column] is not None:
            out[column] = row[column] * factor
    out.update(updates)
    return out


def as_system(row: dict[str, Any], library: str, system: str, factor: float, how: str) -> dict:
    """``row`` redone as ``library``'s row (system ``system``, configured ``how``)."""
    params = json.loads(row["params_json"]) | {"configured_as": how}
    case = row["case_id"].replace(row["library"], library).replace("]", f",{how}]")
    documented = how == AS_DOCUMENTED
    return scaled(
        row,
        factor,
        library=library,
        case_id=case,
        test_id=case,
        params_json=json.dumps(params, sort_keys=True),
        system=system,
        configured_as=how,
        configured_from=DALI_EXAMPLE if documented else None,
        crop_decode="roi" if documented else "full",
    )


def with_systems(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The fixture's loader rows with their systems, and DALI twice at 2 workers: same recipe at
    0.6x the DataLoader's row, and as documented (region-of-interest decode) 13% faster than that."""
    out = []
    for row in rows:
        if row["stage"] == "loader" and row["library"] in SYSTEMS:
            row = {**row, "system": SYSTEMS[row["library"]], "configured_as": SAME_RECIPE}
        out.append(row)
    two = next(
        r
        for r in rows
        if r["stage"] == "loader"
        and r["library"] == "torch-dataloader"
        and r["workers"] == 2
        and r["variant"] == "folder-pillow"
    )
    out.append(as_system(two, "dali", "DALI", 0.6, SAME_RECIPE))
    out.append(as_system(two, "dali", "DALI", 0.6 * 1.13, AS_DOCUMENTED))
    return out


def segmentation(rows: list[dict[str, Any]], factor: float) -> list[dict[str, Any]]:
    """The DataLoader and DALI rows redone as segmentation rows ``factor`` x as fast."""
    found = []
    for row in rows:
        if row["stage"] != "loader" or row.get("system") not in ("DataLoader", "DALI"):
            continue
        params = json.loads(row["params_json"]) | {"task": "segmentation"}
        case = row["case_id"].replace("]", ",task=segmentation]")
        found.append(
            scaled(
                row,
                factor,
                case_id=case,
                test_id=case,
                task="segmentation",
                params_json=json.dumps(params, sort_keys=True),
            )
        )
    return found


def loader_rows() -> list[dict[str, Any]]:
    return with_systems(run_rows(BASE, stages=("loader",)))


def test_each_system_at_its_best_against_the_pick() -> None:
    rows = loader_rows()
    frame = frame_of(rows)
    (table,) = systems_tables(frame)
    (answer,) = answers(frame)
    assert answer.best is not None and table.pick is not None
    assert table.pick.case_id == answer.best.case_id
    assert table.task == "classification" and table.output == "3x224x224"
    lines = {s.system: s for s in table.systems}
    assert set(lines) == {"DataLoader", "thread pool", "DALI"}  # no experiment, no library names
    ok = frame[(frame["status"] == "ok") & (frame["stage"] == "loader")]
    for system, line in lines.items():
        own = ok[ok["system"] == system]
        own = own[~own["params_json"].str.contains("accelerator_images_per_s")]
        assert line.rows == len(own)
        if line.is_pick:  # the pick's system is shown at the pick, which ties with its fastest
            assert line.measured is table.pick and line.versus_text() == "the pick"
            continue
        best = own.loc[own["images_per_s_median"].idxmax()]
        assert line.measured.case_id == best["case_id"]
        assert line.versus_pick is not None
        assert line.versus_pick.factor == pytest.approx(
            best["images_per_s_median"] / answer.best.images_per_s
        )
        assert line.ties_with_pick == (not line.versus_pick.supported)
    assert sum(s.is_pick for s in table.systems) == 1
    assert lines[SYSTEMS[answer.best.configuration.loader]].is_pick
    # DALI's as-documented row (region-of-interest decode) beats its same-recipe row by 13%
    dali = lines["DALI"]
    assert dali.configured_as == AS_DOCUMENTED and dali.crop_decode == "roi"
    assert dali.configured_from == DALI_EXAMPLE
    assert dali.change.startswith("as documented (region-of-interest decode): +13% over its")
    assert dali.configured_text() == f"as documented: {DALI_EXAMPLE}"
    assert dali.versus_pick is not None and dali.versus_pick.supported  # far slower: no tie
    assert "tie" not in dali.versus_text()
    # the DataLoader's same-recipe best named by what tells it from its other rows
    data_loader = lines["DataLoader"]
    assert data_loader.configured_as == SAME_RECIPE
    assert data_loader.change.startswith("same recipe at workers 2")
    record = dali.record()
    assert record["images/s (95% interval)"].count("(") == 1
    assert record["row"] == dali.measured.cite()


def test_same_recipe_best_names_the_as_documented_row_below_it() -> None:
    rows = [r for r in loader_rows() if r.get("system") != "DALI"]
    two = next(r for r in rows if r["case_id"].startswith("loader/torch-dataloader/folder-pillow["))
    assert two["workers"] == 0
    rows += [
        as_system(two, "dali", "DALI", 0.6, SAME_RECIPE),
        as_system(two, "dali", "DALI", 0.6 * 0.5, AS_DOCUMENTED),
    ]
    (table,) = systems_tables(frame_of(rows))
    dali = next(s for s in table.systems if s.system == "DALI")
    assert dali.configured_as == SAME_RECIPE and dali.configured_text() == "same recipe"
    assert dali.change == (
        "same recipe: its only same-recipe configuration measured; "
        "as documented (region-of-interest decode): -50%"
    )


def test_tasks_are_kept_apart() -> None:
    rows = loader_rows()
    seg = segmentation(rows, 100.0)  # far faster than any classification row: other work
    frame = frame_of(rows + seg)
    tables = systems_tables(frame)
    assert [t.task for t in tables] == ["classification", "segmentation"]
    (alone,) = systems_tables(frame_of(rows))
    (classification,) = tables_for(tables, "classification")
    assert [(s.system, s.measured.case_id) for s in classification.systems] == [
        (s.system, s.measured.case_id) for s in alone.systems
    ]
    (seg_table,) = tables_for(tables, "segmentation")
    assert {s.system for s in seg_table.systems} == {"DataLoader", "DALI"}
    assert all("task=segmentation" in s.measured.case_id for s in seg_table.systems)
    (task,) = task_answers(frame)
    assert seg_table.pick is not None and seg_table.pick.case_id == task.best.case_id
    assert seg_table.output.startswith("3x224x224 float32 image + 224x224 int64 mask")
    dali = next(s for s in seg_table.systems if s.system == "DALI")
    assert dali.change.startswith("as documented (region-of-interest decode): +13%")


def test_rows_without_the_new_columns_fall_back_to_the_library() -> None:
    frame = frame_of(run_rows(BASE, stages=("loader",)))
    for old in (frame.drop(columns=NEW_COLUMNS, errors="ignore"), frame):
        (table,) = systems_tables(old)
        assert {s.system for s in table.systems} == {"torch-dataloader", "threads"}
        assert {s.configured_as for s in table.systems} == {SAME_RECIPE}
        assert all(s.configured_from is None for s in table.systems)
    plain = pd.DataFrame(frame.drop(columns=NEW_COLUMNS, errors="ignore").to_dict("records"))
    assert [s.system for s in systems_tables(plain)[0].systems] == [s.system for s in table.systems]


def test_no_loader_rows_no_table() -> None:
    assert systems_tables(frame_of(run_rows(BASE, stages=("read",)))) == []


def test_the_report_writes_the_table() -> None:
    rows = loader_rows()
    frame = frame_of(rows + segmentation(rows, 2.0))
    text = render_markdown(build_report(frame, LoadedResults(frame, [], []), "here"))
    assert "#### Each system at its best · classification: ci-box" in text
    assert "#### Each system at its best · segmentation: ci-box" in text
    assert (
        "| system | configured as | images/s (95% interval) | × the pick (95% interval) |" in text
    )
    assert f"| DALI | as documented: {DALI_EXAMPLE} |" in text
    assert "as documented (region-of-interest decode): +13% over its same-recipe best" in text
    assert "| the pick |" in text


@pytest.mark.parametrize(
    ("value", "low", "high", "places", "shown"),
    [
        (342.1081, None, None, 0, "342"),  # three significant figures
        (342.1081, 330.0, 355.0, -1, "340 (330-360)"),  # the interval's width: 25, tens
        (342.1081, 341.9, 342.3, 0, "342 (342-342)"),  # a tight interval adds no digit
        (1234.5, 1000.0, 1500.0, -2, "1,200 (1,000-1,500)"),  # width 500: hundreds
        (342.1081, 100.0, 900.0, -1, "340 (100-900)"),  # at least two significant figures
        (0.012345, None, None, 4, "0.0123"),
        (1.2345, 1.1, 1.4, 1, "1.2 (1.1-1.4)"),
    ],
)
def test_figures_rounded_to_what_the_interval_supports(
    value: float, low: float | None, high: float | None, places: int, shown: str
) -> None:
    assert figure_places(value, low, high) == places
    assert figure_text(value, low, high) == shown
    assert round_figure(value, places) == pytest.approx(round(value, places))
    assert figure_places(float("nan")) == 0 and round_figure(None, 0) is None
