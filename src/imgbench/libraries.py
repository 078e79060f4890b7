"""What `imgbench env` reports: each library of the matrix, installed or not, and why."""

from __future__ import annotations

import importlib
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


# Readers that older posts use and that cannot run on a current stack; listed so the gap is visible.
UNAVAILABLE: tuple[LibraryStatus, ...] = (
    LibraryStatus(
        "read",
        "scipy.misc.imread",
        "scipy",
        None,
        False,
        "removed in SciPy 1.2 (2019); its replacement is imageio, measured as `imageio`",
    ),
    LibraryStatus(
        "read",
        "mxnet mx.image.imdecode",
        "mxnet",
        None,
        False,
        "Apache MXNet is retired (moved to the Attic in 2023); no wheels for Python 3.11 + numpy 2",
    ),
)


def _import_status(module: str) -> str | None:
    try:
        importlib.import_module(module)
    except Exception as exc:  # ImportError or a library broken at import time
        return f"cannot import {module}: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
    return None


def library_statuses() -> list[LibraryStatus]:
    from imgbench.readers.registry import READERS

    seen: set[tuple[str, str]] = set()
    statuses: list[LibraryStatus] = []
    for spec in READERS:
        key = ("read", spec.library)
        if key in seen:
            continue
        seen.add(key)
        reason = next((r for m in spec.requires if (r := _import_status(m))), None)
        statuses.append(
            LibraryStatus(
                "read",
                spec.library,
                spec.dist,
                dist_version(spec.dist),
                reason is None,
                reason,
            )
        )
    return statuses + list(UNAVAILABLE)
