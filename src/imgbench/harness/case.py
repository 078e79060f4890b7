"""A benchmark case: what a stage declares, and the work it hands the harness to time.

Stages only describe cases and build workloads; timing, thread pinning, requirement checks,
skips and rows all happen once, in the harness.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from imgbench.errors import one_line

if TYPE_CHECKING:
    from imgbench.harness.context import CaseContext


@dataclass
class Workload:
    """The inputs of one timed round and the function applied to each of them."""

    items: Sequence[Any]
    fn: Callable[[Any], Any]
    bytes_per_round: int = 0
    megapixels_per_round: float = 0.0
    images_per_item: int = 1
    before_round: Callable[[], None] | None = None  # untimed, e.g. evict the page cache
    cache_method: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    close: Callable[[], None] | None = None
    # True when ``fn`` runs a tool that times itself (e.g. tjbench) and returns seconds per item;
    # those seconds, not the harness clock, become the samples.
    self_timed: bool = False
    # set when the version worth recording is not a Python distribution's (e.g. tjbench's package)
    library_version: str | None = None

    @property
    def images_per_round(self) -> int:
        return len(self.items) * self.images_per_item


@dataclass(frozen=True)
class Case:
    """One configuration to measure. ``prepare`` builds its workload from the dataset."""

    stage: str
    library: str
    variant: str
    prepare: Callable[[CaseContext, Case], Workload]
    params: Mapping[str, Any] = field(default_factory=dict)
    requires: tuple[str, ...] = ()  # importable modules the case needs
    dist: str | None = None  # distribution whose version the row records
    environment: str = "main"
    check: Callable[[], str | None] | None = None  # returns a skip reason, or None

    @property
    def threads(self) -> int | None:
        return self.params.get("threads")

    @property
    def case_id(self) -> str:
        """Stable across runs: the key the comparison joins on."""
        params = ",".join(f"{k}={_fmt(v)}" for k, v in sorted(self.params.items()))
        return f"{self.stage}/{self.library}/{self.variant}[{params}]"

    @property
    def test_id(self) -> str:
        """Short pytest id: library-variant plus parameter values."""
        values = [
            f"t{_fmt(v)}" if k == "threads" else _fmt(v)
            for k, v in sorted(self.params.items())
            if v is not None or k == "threads"
        ]
        return "-".join([self.library, self.variant, *values]).replace(" ", "_")

    def unmet_requirement(self) -> str | None:
        """Why this case cannot run here, or None."""
        for module in self.requires:
            try:
                importlib.import_module(module)
            except Exception as exc:  # an ImportError, or a library broken at import
                return f"{self.library}: cannot import {module} ({one_line(exc)})"
        if self.check is not None:
            return self.check()
        return None


def _fmt(value: Any) -> str:
    if value is None:
        return "default"
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)
