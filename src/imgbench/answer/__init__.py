"""The answer to "what should I change?": read from result rows, shared by the dashboard's
Overview, ``imgbench report`` and ``imgbench advise`` (docs/dashboard.md, "The answer")."""

from imgbench.answer.bound import Bound
from imgbench.answer.intervals import Interval, Ratio
from imgbench.answer.measured import Measured
from imgbench.answer.recommend import Answer, Reference, answers
from imgbench.answer.rows import Configuration, problems
from imgbench.answer.tasks import TaskAnswer, task_answers

__all__ = [
    "Answer",
    "Bound",
    "Configuration",
    "Interval",
    "Measured",
    "Ratio",
    "Reference",
    "TaskAnswer",
    "answers",
    "problems",
    "task_answers",
]
