"""Tasks beyond classification never meet classification in the answer: the main answer reads
classification rows only, and each other task gets its own short answer from its own rows."""

from __future__ import annotations

import json
from typing import Any

from imgbench.answer import answers, task_answers
from imgbench.loaders.advise import advise
from imgbench.report.document import build_report
from imgbench.report.markdown import render_markdown
from imgbench.results.store import LoadedResults
from tests.answer.test_answer import BASE, frame_of, real_loaders
from tests.dashboard.fixtures import run_rows


def _task_rows(rows: list[dict[str, Any]], task: str, scale: float) -> list[dict[str, Any]]:
    """The run's DataLoader rows at 0 and 2 workers, redone as ``task`` rows ``scale`` x as fast."""
    found = []
    for row in rows:
        params = json.loads(row["params_json"])
        if row["stage"] != "loader" or row["library"] != "torch-dataloader":
            continue
        if "accelerator_images_per_s" in params or row["variant"] != "folder-pillow":
            continue
        params |= {"task": task, "pipeline": f"albumentations/numpy:{task}"}
        case = row["case_id"].replace("]", f",task={task}]")
        found.append(
            {
                **row,
                "case_id": case,
                "test_id": case,
                "variant": f"files-opencv-albumentations-{task}",
                "task": task,
                "params_json": json.dumps(params, sort_keys=True),
                "images_per_s_median": row["images_per_s_median"] * scale,
            }
        )
    assert found
    return found


def test_tasks_are_answered_apart_from_classification() -> None:
    rows = run_rows(BASE)
    (alone,) = answers(frame_of(rows))
    # a segmentation row 100x faster than any classification row must not become the answer
    seg, ocr = _task_rows(rows, "segmentation", 100.0), _task_rows(rows, "crop-ocr", 0.5)
    frame = frame_of(rows + seg + ocr)
    (main,) = answers(frame)
    assert main.best is not None and alone.best is not None
    assert main.best.case_id == alone.best.case_id
    assert {c.case_id for c in main.candidates} == {c.case_id for c in alone.candidates}
    found = {t.task: t for t in task_answers(frame)}
    assert set(found) == {"segmentation", "crop-ocr"}
    for task, own in (("segmentation", seg), ("crop-ocr", ocr)):
        answer = found[task]
        best = max(own, key=lambda r: r["images_per_s_median"])
        assert answer.candidates == len(own)
        assert {answer.best.case_id, *(m.case_id for m in answer.tied)} <= {
            r["case_id"] for r in own
        }
        assert answer.best.images_per_s <= best["images_per_s_median"]
        assert answer.best.interval is not None  # with its interval
        assert f"task={task}" in answer.best.case_id
        assert task in answer.title and "images/s (95% interval" in answer.headline()
    assert task_answers(frame_of(rows)) == []  # classification only: no task answer


def test_report_and_advise_keep_tasks_apart() -> None:
    rows = run_rows(BASE)
    seg = _task_rows(rows, "segmentation", 100.0)
    frame = frame_of(rows + seg)
    text = render_markdown(build_report(frame, LoadedResults(frame, [], []), "here"))
    assert "### Other tasks" in text and "**segmentation:" in text
    machine = str(frame["machine_id"].iloc[0])
    advice = advise(frame, 1.0, machine)
    listed = set(advice.reaching["case_id"]) | set(advice.others["case_id"])
    assert listed and not any("task=segmentation" in c for c in listed)
    assert listed <= set(real_loaders(frame)["case_id"])
    assert [t.task for t in advice.task_answers] == ["segmentation"]
