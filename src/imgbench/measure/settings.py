"""Every measuring control in one frozen record, resolved once from a profile plus overrides.

pyperf carries one settings namespace from runner to worker; so does imgbench: the pytest
plugin, ``imgbench profile`` and the scripts resolve a :class:`Settings` here, and the manager,
the worker job, the rounds engine and the case context all read that one record. Adding a
control is one field here, its use, and one schema column (docs/contributing.md).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from imgbench.measure.allocator import ALLOCATORS
from imgbench.measure.host import HostGate
from imgbench.measure.layout import LAYOUTS
from imgbench.profiles import Profile

# overrides the profile's ``worker_imports`` where no option does (profile | selected)
WORKER_IMPORTS_ENV = "IMGBENCH_WORKER_IMPORTS"
WORKER_IMPORTS = ("profile", "selected")
PROCESS_MODELS = ("worker", "in-process")
MEASURES = ("wall", "instructions")


class SettingsError(ValueError):
    """A control with a value it cannot take: one line naming it and the values it can."""


@dataclass(frozen=True, kw_only=True)
class Settings:
    """How every case of a session is measured (what it measures is the profile's plans)."""

    rounds: int = 10  # timed rounds per case
    warmup_rounds: int = 1  # untimed passes before calibration
    max_images: int = 32  # images per round (per codec), from the start of the manifest
    # a round repeats its items until it lasts this long (pyperf's calibrated loops)
    min_round_s: float = 0.02
    min_case_s: float = 0.0  # timed rounds add up to at least this; 0: rounds only
    # worker: each case in a fresh fork of a pristine server process; in-process: the runner's
    process_model: Literal["worker", "in-process"] = "worker"
    processes: int = 1  # worker processes per case, their rounds pooled (1 when counting)
    allocator: str = "glibc"  # the worker processes' allocator (imgbench.measure.allocator)
    address_layout: Literal["fixed", "randomized"] = "fixed"  # imgbench.measure.layout
    # profile: the server imports every case's modules; selected: only the selected cases'
    worker_imports: Literal["profile", "selected"] = "profile"
    host_max_ratio: float = 1.3  # rounds the host slowed past this are timed again; 0: off
    host_budget_s: float = 1.0  # per case, for waiting and for re-timed rounds
    # wall: timed rounds; instructions: one pass counted under callgrind (the regression gate)
    measure: Literal["wall", "instructions"] = "wall"

    def host_gate(self) -> HostGate:
        """A fresh gate with these settings (its reference is the runner's to carry)."""
        return HostGate(max_ratio=self.host_max_ratio, budget_s=self.host_budget_s)

    def in_worker(self) -> bool:
        """Cases run in worker forks (instruction counts always do: callgrind runs the server)."""
        return self.process_model == "worker" or self.measure == "instructions"


FIELDS = tuple(f.name for f in dataclasses.fields(Settings))
_CHOICES: dict[str, tuple[str, ...]] = {
    "process_model": PROCESS_MODELS,
    "allocator": ALLOCATORS,
    "address_layout": LAYOUTS,
    "worker_imports": WORKER_IMPORTS,
    "measure": MEASURES,
}


def resolve(
    profile: Profile,
    overrides: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
) -> Settings:
    """The profile's controls, then ``$IMGBENCH_WORKER_IMPORTS``, then ``overrides`` (a ``None``
    value keeps what came before); checked, and made consistent (a count runs one process and
    imports only the selected cases' modules: torch alone costs a minute under callgrind)."""
    environ = os.environ if environ is None else environ
    values: dict[str, Any] = {f: getattr(profile, f) for f in FIELDS if hasattr(profile, f)}
    if environ.get(WORKER_IMPORTS_ENV):
        values["worker_imports"] = environ[WORKER_IMPORTS_ENV]
    for name, value in (overrides or {}).items():
        if name not in FIELDS:
            raise SettingsError(f"unknown setting {name!r}; known: {', '.join(FIELDS)}")
        if value is not None:
            values[name] = value
    for name, choices in _CHOICES.items():
        if name in values and values[name] not in choices:
            where = f" ({WORKER_IMPORTS_ENV})" if name == "worker_imports" else ""
            raise SettingsError(f"{name}={values[name]!r}{where}; known: {', '.join(choices)}")
    for name in ("rounds", "max_images", "processes"):
        if name in values and int(values[name]) < 1:
            raise SettingsError(f"{name}={values[name]!r}: at least 1")
    if values.get("measure") == "instructions":
        values.update(worker_imports="selected", processes=1)
    return Settings(**values)
