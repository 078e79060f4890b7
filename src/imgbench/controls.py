"""Settings resolution: a profile's controls plus a session's overrides -> one :class:`Settings`.

The control plane's one way in for a control (``imgbench.measure.settings`` is the record, the
engine reads it and nothing else): the profile's ``settings`` table, then
``$IMGBENCH_WORKER_IMPORTS``, then ``$IMGBENCH_SETTINGS``, then what the session chose
(``imgbench run --set``, ``--imgbench-set``, ``--imgbench-rounds``), each checked once against
its field's type and the values it can take.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from imgbench.disks.catalog import PROFILES
from imgbench.measure.allocator import ALLOCATORS
from imgbench.measure.context import CaseContext
from imgbench.measure.settings import (
    WORKER_IMPORTS,
    Settings,
    SettingsError,
    parse_assignments,
)
from imgbench.paths import looks_like_path
from imgbench.plan import override
from imgbench.profiles import Profile

if TYPE_CHECKING:
    from imgbench.datasets import Dataset

# overrides the profile's ``worker_imports`` where no option does (profile | selected)
WORKER_IMPORTS_ENV = "IMGBENCH_WORKER_IMPORTS"
# any control, as space-separated NAME=VALUE, where no option says otherwise (every session a
# process starts, e.g. the test suite's: host_max_ratio=0 for correctness sessions)
SETTINGS_ENV = "IMGBENCH_SETTINGS"
_CHOICES: dict[str, tuple[str, ...]] = {
    "allocator": ALLOCATORS,
    "disk_profile": tuple(PROFILES),
}  # the others are Literal types


def resolve(
    profile: Profile,
    overrides: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
) -> Settings:
    """The profile's controls (its ``settings`` table), then ``$IMGBENCH_WORKER_IMPORTS``, then
    ``$IMGBENCH_SETTINGS``, then ``overrides`` (a ``None`` value keeps what came before;
    ``rounds`` chosen there, without ``loader_rounds``, set the loaders' rounds too); each
    checked against its field's type, and made consistent (a count runs one process and imports
    only the selected cases' modules: torch alone costs a minute under callgrind)."""
    environ = os.environ if environ is None else environ
    values: dict[str, Any] = dict(profile.settings)  # [tool.imgbench.profiles.NAME.settings]
    if chosen := environ.get(WORKER_IMPORTS_ENV):
        if chosen not in WORKER_IMPORTS:
            raise SettingsError(
                f"{WORKER_IMPORTS_ENV}={chosen!r}; known: {', '.join(WORKER_IMPORTS)}"
            )
        values["worker_imports"] = chosen
    chosen_here = parse_assignments(environ.get(SETTINGS_ENV, "").split())
    chosen_here.update({k: v for k, v in (overrides or {}).items() if v is not None})
    if "rounds" in chosen_here and "loader_rounds" not in chosen_here:
        # rounds chosen for this session (--imgbench-rounds) are every stage's: a profile's
        # shorter loader screen yields to them
        values["loader_rounds"] = 0
    values.update(chosen_here)
    try:
        settings: Settings = override(Settings(), values, "settings")
    except ValueError as exc:
        raise SettingsError(str(exc)) from None
    for name, choices in _CHOICES.items():
        if getattr(settings, name) not in choices:
            raise SettingsError(f"{name}={getattr(settings, name)!r}; known: {', '.join(choices)}")
    for name in ("rounds", "max_images", "processes"):
        if getattr(settings, name) < 1:
            raise SettingsError(f"{name}={getattr(settings, name)!r}: at least 1")
    if settings.measure == "instructions":
        settings = dataclasses.replace(settings, worker_imports="selected", processes=1)
    return settings


def case_context(dataset: Dataset, profile: Profile, **overrides: Any) -> CaseContext:
    """A context for ``profile``'s plans and its settings with ``overrides``."""
    return CaseContext(dataset=dataset, settings=resolve(profile, overrides), plans=profile.plans)


class DatasetPathError(ValueError):
    """A dataset asked for by a path that does not exist: one line."""


def session_dataset(requested: str | None, profile: Profile, check: bool = True) -> str:
    """The dataset a session reads: the folder or recipe asked for, else the profile's recipe;
    the one place the default is chosen (the CLI, the pytest plugin and a Ray node ask here).
    ``check``: a path asked for must exist (a row naming a failed session's dataset need not)."""
    if check and requested and looks_like_path(requested) and not Path(requested).exists():
        raise DatasetPathError(f"dataset path does not exist: {requested}")
    return requested or profile.dataset
