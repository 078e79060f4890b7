"""Tasks beyond classification never meet classification in the answer: the main answer reads
classification rows only, and each other task gets its own short answer from its own rows."""

from __future__ import annotations

import json
from typing import Any

import pytest

from imgbench.answer import answers, task_answers
from imgbench.answer.advise import advise
from imgbench.answer.tasks import loader_key
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


def _as_loader(
    row: dict[str, Any], library: str, fmt: str, method: str | None, scale: float
) -> dict[str, Any]:
    """A task row redone as ``library``'s row from ``fmt`` (with Keras's ``method``)."""
    params = json.loads(row["params_json"]) | {"format": fmt}
    variant = f"{fmt}-{row['variant'].split('-', 1)[1]}"
    if method is not None:
        params["method"] = method
        variant += f"+{method}"
    case = row["case_id"].replace("torch-dataloader", library).replace("]", f",{fmt},{method}]")
    return {
        **row,
        "case_id": case,
        "test_id": case,
        "library": library,
        "variant": variant,
        "params_json": json.dumps(params, sort_keys=True),
        "images_per_s_median": row["images_per_s_median"] * scale,
    }


def test_keras_and_tf_data_on_segmentation_from_one_run() -> None:
    """Each loader's best segmentation row, tf.data per source, and Keras over tf.data: the
    per-task table the report gives beside the task's answer."""
    rows = run_rows(BASE)
    seg = _task_rows(rows, "segmentation", 1.0)
    base = max(seg, key=lambda r: r["images_per_s_median"])  # the DataLoader's best
    own = [
        _as_loader(base, "tf-data", "files", None, 2.0),
        _as_loader(base, "tf-data", "tfrecord", None, 2.5),
        _as_loader(base, "keras-pydataset", "files", None, 0.4),
        _as_loader(base, "keras-pydataset", "files", "threads", 0.6),
        _as_loader(base, "keras-pydataset", "files", "processes", 0.9),
    ]
    frame = frame_of(rows + seg + own)
    (answer,) = task_answers(frame)
    assert answer.task == "segmentation"
    best = {loader_key(m): m for m in answer.per_loader}
    assert list(best) == ["tf-data (tfrecord)", "tf-data", "torch-dataloader", "keras-pydataset"]
    assert best["keras-pydataset"].case_id == own[-1]["case_id"]  # processes: its best setting
    assert "processes" in best["keras-pydataset"].configuration.knobs
    ips = base["images_per_s_median"]
    assert dict(answer.versus()) == pytest.approx({"tf-data": 0.45, "tf-data (tfrecord)": 0.36})
    assert best["tf-data"].images_per_s == pytest.approx(2.0 * ips)
    text = render_markdown(build_report(frame, LoadedResults(frame, [], []), "here"))
    assert "  - keras-pydataset: " in text and f"{base['workers']} workers, processes" in text
    assert "keras-pydataset at its best: 0.36x tf-data (tfrecord), 0.45x tf-data" in text
