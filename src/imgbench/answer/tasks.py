"""The short answer for each task beyond classification (segmentation, crop-ocr): per machine,
dataset and task, the fastest loader configuration within the noise, with its interval; and
each loader's best row on that task (tf.data per source, Keras at its best setting), with
Keras over tf.data where both ran: the same work in two libraries, from one run's rows.

Classification stays the main answer (:func:`imgbench.answer.answers`, which reads only
classification rows); a task's rows are compared with rows of the same task only, never with
classification's or another task's: their samples and outputs are different work.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from imgbench.answer.measured import MATRIX, Measured
from imgbench.answer.recommend import _group_label, _measured, _ranked
from imgbench.answer.rows import (
    CLASSIFICATION,
    FILES,
    by_machine_and_dataset,
    is_experiment,
    newest_per_case,
    task_of,
    where,
)
from imgbench.answer.ties import equivalent_to_fastest, pick

# what a task's loader hands the model (imgbench.loaders.cases.TASK_OUTPUT, in short)
TASK_OUTPUT = {
    "segmentation": "3x224x224 float32 image + 224x224 int64 mask",
    "crop-ocr": "32x128x3 float32 crop + 4 one-hot heads",
}
KERAS, TF_DATA = "keras-pydataset", "tf-data"  # imgbench.loaders.registry names


def loader_key(measured: Measured) -> str:
    """A loader as the per-loader table names it: its library, and its source where that is
    not the dataset's files (tf.data from TFRecord is a choice apart from tf.data from files)."""
    config = measured.configuration
    return config.loader if config.format == FILES else f"{config.loader} ({config.format})"


def setting(measured: Measured) -> str:
    """Where a loader row ran: its workers, and its method (Keras's threads or processes)."""
    config = measured.configuration
    return ", ".join([f"{config.workers} workers", *config.knobs])


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
    per_loader: list[Measured] = field(default_factory=list)  # each loader's best, fastest first

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

    def versus(self, a: str = KERAS, b: str = TF_DATA) -> list[tuple[str, float]]:
        """Loader ``a``'s best over each of loader ``b``'s (per source): [(b's key, ratio)]."""
        best_a = next((m for m in self.per_loader if m.configuration.loader == a), None)
        if best_a is None:
            return []
        return [
            (loader_key(m), best_a.images_per_s / m.images_per_s)
            for m in self.per_loader
            if m.configuration.loader == b and m.images_per_s > 0
        ]

    def loader_lines(self) -> list[str]:
        """Each loader at its best setting on this task, and Keras over tf.data where both ran."""
        lines = [
            f"{loader_key(m)}: {m.figure()} at {setting(m)} ({m.case_id})" for m in self.per_loader
        ]
        ratios = self.versus()
        if ratios:
            text = ", ".join(f"{ratio:.2f}x {key}" for key, ratio in ratios)
            lines.append(f"{KERAS} at its best: {text} (the same recipe, each library's own way)")
        return lines


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
            latest = newest_per_case(every_run)
            measured = _ranked(
                [
                    _measured(row, medians[str(row["case_id"])], MATRIX)
                    for _, row in latest.iterrows()
                ]
            )
            equivalent = equivalent_to_fastest(measured)
            chosen = pick(equivalent)
            per_loader = list({loader_key(m): m for m in reversed(measured)}.values())
            found.append(
                TaskAnswer(
                    task=str(task),
                    machine=_group_label(group, "hostname", "machine_id"),
                    dataset=_group_label(group, "dataset_name", "dataset_fingerprint"),
                    best=chosen.measured,
                    pick_rule=chosen.rule,
                    tied=[m for m in equivalent if m is not chosen.measured],
                    candidates=len(measured),
                    per_loader=_ranked(per_loader),
                )
            )
    return found
