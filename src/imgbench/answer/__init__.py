"""The answer to "what should I change?": read from result rows, shared by the dashboard's
Overview, ``imgbench report`` and ``imgbench advise`` (docs/dashboard.md, "The answer")."""

from imgbench.answer.bound import Bound
from imgbench.answer.recommend import Answer, Measured, Reference, answers
from imgbench.answer.rows import Configuration, problems

__all__ = ["Answer", "Bound", "Configuration", "Measured", "Reference", "answers", "problems"]
