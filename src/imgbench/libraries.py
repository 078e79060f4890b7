"""What `imgbench env` reports: each library of the matrix, installed or not, and why.

Each stage (imgbench.stages) names its catalog of LibrarySpec entries and its ``UNAVAILABLE``
(library, reason) pairs for libraries that cannot run on this stack.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from imgbench.machine import dist_version


@dataclass(frozen=True)
class LibraryStatus:
    stage: str
    library: str
    dist: str | None
    version: str | None
    available: bool
    reason: str | None
    licence: str | None = None  # as the distribution declares it (a user choosing must know)


def licence_of(meta: metadata.PackageMetadata) -> str | None:
    """A distribution's licence: its SPDX expression, else its licence classifier, else a short
    License field (some carry the whole licence text there)."""
    expression = next(iter(meta.get_all("License-Expression") or []), None)
    if expression:
        return str(expression)
    classifiers = [c for c in meta.get_all("Classifier") or [] if c.startswith("License ::")]
    if classifiers:
        name = classifiers[0].split("::")[-1].strip()
        return {"MIT License": "MIT", "Apache Software License": "Apache-2.0"}.get(name, name)
    text = next(iter(meta.get_all("License") or []), "").strip()
    return text if text and "\n" not in text and len(text) <= 40 else None


def _main_licence(dist: str | None) -> str | None:
    if not dist:
        return None
    try:
        return licence_of(metadata.metadata(dist))
    except metadata.PackageNotFoundError:
        return None


def _isolated_status(stage: str, library: str, dist: str | None, environment: str) -> LibraryStatus:
    """A library that lives in its own venv is available when that venv exists; its version and
    licence are read from the env's own site-packages."""
    from imgbench.envs import ENVIRONMENTS, EnvError, python_for

    declared = ENVIRONMENTS[environment].licence if environment in ENVIRONMENTS else ""
    try:
        python = python_for(environment)
    except EnvError as exc:
        return LibraryStatus(stage, library, dist, None, False, str(exc), declared or None)
    version, licence = f"in .venvs/{environment}", declared or None
    sites = sorted(Path(python).parent.parent.glob("lib/python*/site-packages"))
    found = next(iter(metadata.distributions(name=dist, path=[str(s) for s in sites])), None)
    if dist and found is not None:
        version = f"{found.version} (.venvs/{environment})"
        licence = licence_of(found.metadata) or licence
    return LibraryStatus(stage, library, dist, version, True, None, licence)


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
                LibraryStatus(
                    stage.name,
                    spec.library,
                    spec.dist,
                    version,
                    reason is None,
                    reason,
                    _main_licence(spec.dist),
                )
            )
        for library, reason in stage.unavailable_libraries():
            statuses.append(LibraryStatus(stage.name, library, None, None, False, reason))
    return statuses
