"""What `imgbench env` reports: each library of the matrix, installed or not, and why.

Each stage (imgbench.stages) names its catalog of LibrarySpec entries and its ``UNAVAILABLE``
(library, reason) pairs for libraries that cannot run on this stack.
"""

from __future__ import annotations

from dataclasses import dataclass

from imgbench.machine import dist_version


@dataclass(frozen=True)
class LibraryStatus:
    stage: str
    library: str
    dist: str | None
    version: str | None
    available: bool
    reason: str | None


def _isolated_status(stage: str, library: str, dist: str | None, environment: str) -> LibraryStatus:
    """A library that lives in its own venv is available when that venv exists."""
    from imgbench.envs import EnvError, python_for

    try:
        python_for(environment)
    except EnvError as exc:
        return LibraryStatus(stage, library, dist, None, False, str(exc))
    return LibraryStatus(stage, library, dist, f"in .venvs/{environment}", True, None)


def library_statuses() -> list[LibraryStatus]:
    from imgbench.stages import STAGES

    statuses: list[LibraryStatus] = []
    for stage in STAGES:
        seen: set[str] = set()
        for spec in stage.specs():
            if spec.library in seen:
                continue
            seen.add(spec.library)
            if spec.environment != "main":
                statuses.append(
                    _isolated_status(stage.name, spec.library, spec.dist, spec.environment)
                )
                continue
            reason = spec.unmet_requirement()
            version = dist_version(spec.dist) if spec.dist else None
            statuses.append(
                LibraryStatus(stage.name, spec.library, spec.dist, version, reason is None, reason)
            )
        for library, reason in stage.unavailable_libraries():
            statuses.append(LibraryStatus(stage.name, library, None, None, False, reason))
    return statuses
