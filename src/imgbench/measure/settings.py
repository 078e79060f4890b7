"""Every measuring control in one frozen record, resolved once from a profile plus overrides.

pyperf carries one settings namespace from runner to worker; so does imgbench: the pytest
plugin, ``imgbench profile`` and the scripts resolve a :class:`Settings` here, and the manager,
the worker job, the rounds engine and the case context all read that one record. Adding a
control is one field here, its use, and one schema column (docs/contributing.md).
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from imgbench.measure.allocator import ALLOCATORS
from imgbench.measure.host import HostGate
from imgbench.plan import override
from imgbench.profiles import Profile
from imgbench.storage.profiles import PROFILES

# overrides the profile's ``worker_imports`` where no option does (profile | selected)
WORKER_IMPORTS_ENV = "IMGBENCH_WORKER_IMPORTS"
# any control, as space-separated NAME=VALUE, where no option says otherwise (every session a
# process starts, e.g. the test suite's: host_max_ratio=0 for correctness sessions)
SETTINGS_ENV = "IMGBENCH_SETTINGS"
WORKER_IMPORTS = ("profile", "selected")
PROCESS_MODELS = ("worker", "in-process")
MEASURES = ("wall", "instructions")


class SettingsError(ValueError):
    """A control with a value it cannot take: one line naming it and the values it can."""


@dataclass(frozen=True, kw_only=True)
class Settings:
    """How every case of a session is measured (what it measures is the profile's plans)."""

    rounds: int = 10  # timed rounds per case
    # timed rounds of a loader case; 0: ``rounds``. The loader matrix screens and the head-to-head
    # final (imgbench.final) decides, so its rows can be shorter than the other stages'
    loader_rounds: int = 0
    warmup_rounds: int = 1  # untimed passes before calibration
    max_images: int = 32  # images per round (per codec): a sample of the dataset
    # the sample's seed, and the most images it grows to when max_images miss the dataset's
    # mean megapixels or bytes per image by more than 5% (imgbench.datasets.sample_pool)
    sample_seed: int = 0
    sample_max_images: int = 128
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
    # the emulated disk the session's data sits on (imgbench.storage, docs/disks.md); none: the real one
    disk_profile: str = "none"

    def host_gate(self) -> HostGate:
        """A fresh gate with these settings (its reference is the runner's to carry)."""
        return HostGate(max_ratio=self.host_max_ratio, budget_s=self.host_budget_s)

    def for_stage(self, stage: str) -> Settings:
        """These settings as a case of ``stage`` is timed (a loader case: ``loader_rounds``)."""
        if stage == "loader" and self.loader_rounds > 0:
            return dataclasses.replace(self, rounds=self.loader_rounds)
        return self

    def in_worker(self) -> bool:
        """Cases run in worker forks (instruction counts always do: callgrind runs the server)."""
        return self.process_model == "worker" or self.measure == "instructions"


FIELDS = tuple(f.name for f in dataclasses.fields(Settings))
_CHOICES: dict[str, tuple[str, ...]] = {
    "allocator": ALLOCATORS,
    "disk_profile": tuple(PROFILES),
}  # the others are Literal types


def resolve(
    profile: Profile,
    overrides: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
) -> Settings:
    """The profile's controls (its fields, then its ``settings`` table), then
    ``$IMGBENCH_WORKER_IMPORTS``, then ``$IMGBENCH_SETTINGS``,
    then ``overrides`` (a ``None`` value keeps what came before; ``rounds`` chosen there, without
    ``loader_rounds``, set the loaders' rounds too); each checked against its field's type, and made consistent
    (a count runs one process and imports only the selected cases' modules: torch alone costs a
    minute under callgrind)."""
    environ = os.environ if environ is None else environ
    values: dict[str, Any] = {f: getattr(profile, f) for f in FIELDS if hasattr(profile, f)}
    values.update(profile.settings)  # [tool.imgbench.profiles.NAME.settings]
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


def parse_assignments(assignments: list[str] | None) -> dict[str, Any]:
    """``NAME=VALUE`` strings (``--imgbench-set``) as overrides: a VALUE that reads as JSON (a
    number, true/false, a list) is that, anything else a string; ``resolve`` checks each."""
    parsed: dict[str, Any] = {}
    for text in assignments or []:
        name, sep, value = text.partition("=")
        if not sep or not name:
            raise SettingsError(f"{text!r}: expected NAME=VALUE, NAME one of {', '.join(FIELDS)}")
        try:
            parsed[name.strip()] = json.loads(value)
        except ValueError:
            parsed[name.strip()] = value
    return parsed
