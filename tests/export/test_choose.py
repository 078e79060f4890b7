"""What ``imgbench export`` writes: the answer's pick, or the best exportable candidate with the
reason the pick is not exportable; ``--case``; the allocator's variables; final rows; the CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from typer.testing import CliRunner

from imgbench.cli import app
from imgbench.export.choose import Choice, ExportError, choose, why_not_exportable
from imgbench.export.module import render
from imgbench.results.store import load_results, write_rows
from tests.dashboard.fixtures import run_rows, standard_runs
from tests.export.rows import loader_row

BASE = standard_runs()[0]


def lmdb_first(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows, with the DataLoader's 2-worker row copied as an LMDB row far ahead of all."""
    source = next(r for r in rows if r["library"] == "torch-dataloader" and r["workers"] == 2)
    params = {**json.loads(source["params_json"]), "format": "lmdb"}
    fast = {
        **source,
        "case_id": source["case_id"] + "-lmdb",
        "params_json": json.dumps(params),
        "images_per_s_median": 50_000.0,
        "images_per_s_q1": 49_000.0,
        "images_per_s_q3": 51_000.0,
        "samples_s": [s / 100 for s in source["samples_s"]],
    }
    return [*rows, fast]


def frame_of(rows: list[dict[str, Any]], folder: Path) -> pd.DataFrame:
    write_rows(rows, folder / "run.parquet")
    return load_results(folder).frame


def test_an_unexportable_pick_gives_the_best_exportable_candidate(tmp_path: Path) -> None:
    frame = frame_of(lmdb_first(run_rows(BASE, ("loader",))), tmp_path)
    choice = choose(frame)
    assert choice.asked is not None and choice.asked["case_id"].endswith("-lmdb")
    assert "'lmdb'" in str(choice.why_not) and "format builder" in str(choice.why_not)
    assert why_not_exportable(choice.row) is None
    assert choice.row["library"] == "torch-dataloader"
    # the fixture's "threads" loader is faster than the DataLoader but has no template
    assert any("'threads'" in why for _, why in choice.skipped)
    text = render(choice)
    assert "NOT the answer's pick" in text and choice.asked["case_id"] in text
    assert f"case_id: {choice.row['case_id']}" in text
    compile(text, "exported.py", "exec")


def test_case_names_the_row_to_export(tmp_path: Path) -> None:
    frame = frame_of(run_rows(BASE, ("loader",)), tmp_path)
    row = next(
        r for _, r in frame.iterrows() if r["library"] == "torch-dataloader" and r["workers"] == 0
    )
    choice = choose(frame, str(row["case_id"]))
    assert choice.row["case_id"] == row["case_id"] and choice.asked is None
    with pytest.raises(ExportError, match="no timed ok row with case id 'nope'"):
        choose(frame, "nope")
    with pytest.raises(ExportError, match="no timed ok rows"):
        choose(frame.iloc[0:0])


@pytest.mark.parametrize(
    ("allocator", "variable"),
    [("glibc-tuned", "MALLOC_TRIM_THRESHOLD_"), ("tcmalloc", "LD_PRELOAD"), ("glibc", None)],
)
def test_the_allocator_is_an_env_dict_and_a_comment(allocator: str, variable: str | None) -> None:
    text = render(Choice({**loader_row("torch-dataloader", 2), "allocator": allocator}))
    scope: dict[str, Any] = {}
    exec(
        text.split("# the allocator the row ran under")[1].split("\n\n")[0].split("\n", 1)[1], scope
    )
    if variable is None:
        assert scope["ALLOCATOR_ENV"] == {}
    else:
        assert variable in scope["ALLOCATOR_ENV"]
        assert f"{variable}=" in text.split('"""')[1]  # the header says how to set it


def test_a_final_row_exports_as_its_loader_row_and_cites_both() -> None:
    row = loader_row("threadpool", 2)
    final = {
        **row,
        "stage": "final",
        "case_id": "final::" + row["case_id"],
        "extra_json": json.dumps({"matrix_case_id": row["case_id"]}),
    }
    assert why_not_exportable(final) is None
    text = render(Choice(final))
    assert f"re-measures the matrix row {row['case_id']}" in text


def test_what_cannot_be_exported_says_what_is_missing() -> None:
    assert "no export template for the loader 'ray-data'" in str(
        why_not_exportable(loader_row("ray-data", 2))
    )
    assert "'lmdb'" in str(why_not_exportable(loader_row("torch-dataloader", 2, "lmdb")))
    assert "pass-through" in str(
        why_not_exportable(loader_row("torch-dataloader", 2, "decode-only"))
    )
    au = loader_row("torch-dataloader", 2, accelerator=100)
    assert "AU emulation" in str(why_not_exportable(au))


def test_the_command_writes_a_module(tmp_path: Path) -> None:
    rows = lmdb_first(run_rows(BASE, ("loader",)))
    write_rows(rows, tmp_path / "results" / "run.parquet")
    out = tmp_path / "loader.py"
    result = CliRunner().invoke(
        app, ["export", "--results", str(tmp_path / "results"), "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert "cannot be exported" in result.output and out.is_file()
    compile(out.read_text(), str(out), "exec")
    missing = CliRunner().invoke(app, ["export", "--results", str(tmp_path / "none")])
    assert missing.exit_code == 2 and "no results folder" in missing.output
