"""A benchmark case: what a stage declares, and the work it hands the harness to time.

Stages only describe cases and build workloads; timing, thread pinning, requirement checks,
skips and rows all happen once, in the harness.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from imgbench.library import missing_module, wrong_environment

if TYPE_CHECKING:
    from imgbench.library import LibrarySpec
    from imgbench.measure.cache import CacheControl
    from imgbench.measure.context import CaseContext


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
    # the page-cache state the rounds start from; its method and residency go into the row
    cache: CacheControl | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    close: Callable[[], None] | None = None
    # True when ``fn`` runs a tool that times itself (e.g. tjbench) and returns seconds per item;
    # those seconds, not the harness clock, become the samples.
    self_timed: bool = False
    # set when the version worth recording is not a Python distribution's (e.g. tjbench's package)
    library_version: str | None = None
    # a timed round repeats the items until it lasts the profile's min_round_s; False where a
    # round must be one pass (a cold cache is warm after one pass, a tool times itself)
    calibrate: bool = True
    # the workload's own floor for a round, above the profile's (seconds): a loader that hands
    # over batches in bursts (Ray Data) needs rounds spanning several bursts, or a round times
    # one burst or one gap. Its warm-up then lasts this long too, and the rounds are sized from
    # the mean warm pass (the fastest pass of a bursty loader is a burst)
    min_round_s: float = 0.0
    # True where producers run while the timer is stopped (a loader's workers, threads or
    # prefetch): the engine then never pauses between rounds (the host gate's waits), since a
    # pause lets them work ahead and the next round times batches made during it
    runs_ahead: bool = False
    # the path the rounds read from disk, when it is not what the engine assumes (the dataset's
    # root, or the session's scratch folder for a built store): its device goes in the row
    storage_path: Path | None = None

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
    # session services the case needs (imgbench.measure.services), e.g. ("s3",)
    services: tuple[str, ...] = ()
    # typed row columns the case fills that are not parameters (not part of its id)
    columns: Mapping[str, Any] = field(default_factory=dict)
    # What the engine needs to know of the case's stage, stamped on every case by the stage
    # registry (imgbench.stages), so the engine knows no stage by name: where its rounds read
    # from disk (none, the dataset's root, or a store built in the session's scratch folder),
    # the task its row names when the case says none, whether its rounds are a screen's
    # (``Settings.loader_rounds``), why instruction counts do not apply to it, and whether a
    # worker fork can plan it again (the registry's planner rebuilds it there)
    disk: Literal["none", "dataset", "store"] = "none"
    task: str | None = None
    screen: bool = False
    uncountable: str | None = None
    in_worker: bool = False

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
        reason = wrong_environment(self.environment, self.dist)
        if reason is None:
            reason = missing_module(self.library, self.requires)
        if reason is None and self.check is not None:
            reason = self.check()
        return reason


def with_allocator(cases: list[Case], allocator: str) -> list[Case]:
    """An allocator session's cases: the allocator is one of their parameters, so their ids
    (what comparisons join on) never meet the same case measured under another allocator."""
    return [replace(c, params={**c.params, "allocator": allocator}) for c in cases]


def spec_case(
    spec: LibrarySpec,
    *,
    stage: str,
    prepare: Callable[[CaseContext, Case], Workload],
    params: Mapping[str, Any],
    variant: str | None = None,
    requires: tuple[str, ...] | None = None,
    check: Callable[[], str | None] | None = None,
    services: tuple[str, ...] = (),
    columns: Mapping[str, Any] | None = None,
) -> Case:
    """A case of one registry entry: its library, requirements, version and environment.

    ``check`` is the case's own availability check, run after the spec's; ``services`` the
    session services it needs; ``columns`` typed row columns it fills (not in its id).
    """
    checks = [c for c in (spec.check, check) if c is not None]

    def both() -> str | None:
        return next((reason for c in checks if (reason := c()) is not None), None)

    return Case(
        stage=stage,
        library=spec.library,
        variant=spec.variant if variant is None else variant,
        prepare=prepare,
        params=params,
        requires=spec.requires if requires is None else requires,
        dist=spec.dist,
        environment=spec.environment,
        check=(checks[0] if len(checks) == 1 else both) if checks else None,
        services=services,
        columns=dict(columns or {}),
    )


def _fmt(value: Any) -> str:
    if value is None:
        return "default"
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)
