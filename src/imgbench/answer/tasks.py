"""The short answer for each task beyond classification (segmentation, crop-ocr): per machine,
dataset and task, the fastest loader configuration within the noise, with its interval.

Classification stays the main answer (:func:`imgbench.answer.answers`, which reads only
classification rows); a task's rows are compared with rows of the same task only, never with
classification's or another task's: their samples and outputs are different work.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from imgbench.answer.measured import MATRIX, Measured
from imgbench.answer.recommend import _group_label, _latest, _measured, _ranked
from imgbench.answer.rows import (
    CLASSIFICATION,
    by_machine_and_dataset,
    is_experiment,
    task_of,
    where,
)
from imgbench.answer.ties import equivalent_to_fastest, pick

# what a task's loader hands the model (imgbench.loaders.cases.TASK_OUTPUT, in short)
TASK_OUTPUT = {
    "segmentation": "3x224x224 float32 image + 224x224 int64 mask",
    "crop-ocr": "32x128x3 float32 crop + 4 one-hot heads",
}


@dataclass
class TaskAnswer:
    """One task's best loader configuration on one machine and dataset."""

    task: str
    machine: str
    dataset: str
    best: Measured
    pick_rule: str
    tied: list[Measured] = field(default_factory=list)
    candidates: int = 0

    @property
    def output(self) -> str:
        return TASK_OUTPUT.get(self.task, "?")

    @property
    def title(self) -> str:
        return f"{self.task}: {self.machine} · {self.dataset} (output {self.output})"

    def headline(self) -> str:
        text = (
            f"Use {self.best.configuration.label()}: {self.best.figure()} end to end, "
            f"best of {self.candidates} {self.task} configuration"
            f"{'s' if self.candidates != 1 else ''}"
        )
        if self.tied:
            names = ", ".join(m.configuration.short_label() for m in self.tied[:3])
            more = len(self.tied) - 3
            text += (
                f"; {len(self.tied)} tie with it within the noise ({names}"
                f"{f' and {more} more' if more > 0 else ''}); picked it because {self.pick_rule}"
            )
        return text + "."

    def lines(self) -> list[str]:
        """The title, the headline, and the row it cites."""
        return [self.title, self.headline(), f"row: {self.best.cite()}"]


def task_answers(frame: pd.DataFrame) -> list[TaskAnswer]:
    """One answer per machine, dataset and task other than classification whose loader rows
    are in ``frame`` (timed ok rows only); empty where there are none."""
    found: list[TaskAnswer] = []
    for group in by_machine_and_dataset(frame):
        loaders = group[where(group, lambda r: r.get("stage") == "loader" and not is_experiment(r))]
        if loaders.empty:
            continue
        tasks = loaders.assign(_task=[task_of(r) for r in loaders.to_dict("records")])
        for task, rows in tasks.groupby("_task", sort=True):
            if task == CLASSIFICATION:
                continue
            every_run = rows.drop(columns="_task")
            medians = every_run.groupby("case_id")["images_per_s_median"].apply(
                lambda v: [float(x) for x in v]
            )
            latest = _latest(every_run)
            measured = _ranked(
                [
                    _measured(row, medians[str(row["case_id"])], MATRIX)
                    for _, row in latest.iterrows()
                ]
            )
            equivalent = equivalent_to_fastest(measured)
            chosen = pick(equivalent)
            found.append(
                TaskAnswer(
                    task=str(task),
                    machine=_group_label(group, "hostname", "machine_id"),
                    dataset=_group_label(group, "dataset_name", "dataset_fingerprint"),
                    best=chosen.measured,
                    pick_rule=chosen.rule,
                    tied=[m for m in equivalent if m is not chosen.measured],
                    candidates=len(measured),
                )
            )
    return found
