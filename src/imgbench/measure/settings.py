"""Every measuring control in one frozen record, resolved once from a profile plus overrides.

pyperf carries one settings namespace from runner to worker; so does imgbench: the pytest
plugin, ``imgbench profile`` and the scripts resolve a :class:`Settings` (``imgbench.controls``:
a profile plus overrides, checked once), and the manager,
the worker job, the rounds engine and the case context all read that one record. Adding a
control is one field here, its use, and one schema column (docs/contributing.md).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from imgbench.measure.host import HostGate


class Screened(Protocol):
    """A case as ``Settings.for_case`` reads it (``imgbench.measure.case.Case``)."""

    @property
    def screen(self) -> bool: ...


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
    # the emulated disk the session's data sits on (imgbench.disks, docs/disks.md); none: the real one
    disk_profile: str = "none"

    def host_gate(self) -> HostGate:
        """A fresh gate with these settings (its reference is the runner's to carry)."""
        return HostGate(max_ratio=self.host_max_ratio, budget_s=self.host_budget_s)

    def for_case(self, case: Screened) -> Settings:
        """These settings as ``case`` is timed (a screening case, the loader matrix's:
        ``loader_rounds``)."""
        if case.screen and self.loader_rounds > 0:
            return dataclasses.replace(self, rounds=self.loader_rounds)
        return self

    def in_worker(self) -> bool:
        """Cases run in worker forks (instruction counts always do: callgrind runs the server)."""
        return self.process_model == "worker" or self.measure == "instructions"


FIELDS = tuple(f.name for f in dataclasses.fields(Settings))


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
