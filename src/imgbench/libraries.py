"""What `imgbench env` reports: each library of the matrix, installed or not, and why.

Each stage's registry module lists its specs (objects with ``library``, ``dist`` and ``requires``)
and may list ``UNAVAILABLE``: (library, reason) pairs for libraries that cannot run on this stack.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from imgbench.machine import dist_version
from imgbench.errors import one_line

# stage -> "module:attribute" of its sequence of specs
CATALOGS: dict[str, str] = {
    "read": "imgbench.readers.registry:READERS",
    "augment": "imgbench.augment.registry:LIBRARIES",
    "format": "imgbench.formats.registry:FORMATS",
    "loader": "imgbench.loaders.registry:LOADERS",
}


@dataclass(frozen=True)
class LibraryStatus:
    stage: str
    library: str
    dist: str | None
    version: str | None
    available: bool
    reason: str | None


def _import_status(module: str) -> str | None:
    try:
        importlib.import_module(module)
    except Exception as exc:  # ImportError or a library broken at import time
        return f"cannot import {module}: {one_line(exc)}"
    return None


def _isolated_status(stage: str, library: str, dist: str | None, environment: str) -> LibraryStatus:
    """A library that lives in its own venv is available when that venv exists."""
    from imgbench.envs import EnvError, python_for

    try:
        python_for(environment)
    except EnvError as exc:
        return LibraryStatus(stage, library, dist, None, False, str(exc))
    return LibraryStatus(stage, library, dist, f"in .venvs/{environment}", True, None)


def library_statuses() -> list[LibraryStatus]:
    statuses: list[LibraryStatus] = []
    for stage, target in CATALOGS.items():
        module_name, attr = target.split(":")
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue  # the stage is not built yet
        seen: set[str] = set()
        for spec in getattr(module, attr, ()):
            if spec.library in seen:
                continue
            seen.add(spec.library)
            environment = getattr(spec, "environment", "main")
            if environment != "main":
                statuses.append(_isolated_status(stage, spec.library, spec.dist, environment))
                continue
            reason = next((r for m in spec.requires if (r := _import_status(m))), None)
            version = dist_version(spec.dist) if spec.dist else None
            statuses.append(
                LibraryStatus(stage, spec.library, spec.dist, version, reason is None, reason)
            )
        for library, reason in getattr(module, "UNAVAILABLE", ()):
            statuses.append(LibraryStatus(stage, library, None, None, False, reason))
    return statuses
