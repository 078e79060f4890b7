"""What plans a session's cases, as the engine sees it: handed in, never imported.

The control plane (``imgbench.stages.Planner``) plans the cases in the runner; the manager puts
the same planner in each worker job, and the forked worker plans its one case again from it.
The engine so imports neither the stage registry nor the profiles, and a worker does not read
``pyproject.toml`` again: the planner carries the session's resolved profile (it is pickled).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from imgbench.measure.case import Case
    from imgbench.measure.settings import Settings
    from imgbench.plan import StagePlan


class Planner(Protocol):
    """A session's picklable case planner."""

    @property
    def plans(self) -> Mapping[str, StagePlan]:
        """Each stage's plan (stage name -> plan), which the cases' context hands them."""
        ...

    @property
    def allocator_session(self) -> bool:
        """True in a session run under a chosen allocator (its cases then run only in workers)."""
        ...

    def cases(self, stage: str, settings: Settings) -> list[Case]:
        """The session's cases of ``stage`` under ``settings``."""
        ...
