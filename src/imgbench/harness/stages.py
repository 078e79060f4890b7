"""Which function lists the cases of each stage. Adding a stage is one line here."""

from __future__ import annotations

import importlib
from collections.abc import Callable

from imgbench.harness.case import Case
from imgbench.profiles import Profile

STAGES: dict[str, str] = {
    "read": "imgbench.readers.cases:reader_cases",
    "augment": "imgbench.augment.cases:augment_cases",
    "format": "imgbench.formats.cases:format_cases",
    "loader": "imgbench.loaders.cases:loader_cases",
}


def stage_cases(stage: str, profile: Profile) -> list[Case]:
    try:
        target = STAGES[stage]
    except KeyError:
        raise ValueError(f"unknown stage {stage!r}; known: {sorted(STAGES)}") from None
    module_name, attr = target.split(":")
    factory: Callable[[Profile], list[Case]] = getattr(importlib.import_module(module_name), attr)
    return factory(profile)
