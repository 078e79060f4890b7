"""The four stages, each registered once: everything that lists stages reads them from here.

The pytest plugin plans a bench module's cases from its ``pytest.mark.imgbench(stage=NAME)``,
``imgbench env`` lists each stage's catalog, ``imgbench verify NAME`` comes from ``verify``,
``imgbench run`` runs the stages with ``extra_datasets`` on the profile's extra datasets, and the
dashboard shows one page per stage. Adding a stage is one entry here plus the files it names.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal

from imgbench.attrs import load_attr
from imgbench.augment.plan import AugmentPlan
from imgbench.disks.catalog import DISK_PASS
from imgbench.formats.plan import FormatPlan
from imgbench.loaders.plan import LoaderPlan
from imgbench.measure.case import Case, with_allocator
from imgbench.plan import StagePlan
from imgbench.readers.plan import ReadPlan

if TYPE_CHECKING:
    from imgbench.library import LibrarySpec
    from imgbench.measure.settings import Settings
    from imgbench.profiles import Profile, ProfileChoice


@dataclass(frozen=True, kw_only=True)
class Stage:
    name: str  # the rows' stage column and the bench marker: pytest.mark.imgbench(stage=name)
    title: str  # what the dashboard and the docs call it
    plan: type[StagePlan]  # the stage's plan class; its defaults are the default profile's plan
    catalog: str  # "module:ATTR": the built-in LibrarySpec entries (others come by entry point)
    spec_class: str  # "module:Class": the stage's LibrarySpec subclass
    unavailable: str | None  # "module:ATTR": (library, reason) pairs that cannot run here
    cases: str  # "module:function(profile) -> list[Case]"
    verify_command: str | None  # "module:attr" registered as ``imgbench verify <verify_name>``
    verify_name: str
    bench: str  # the bench file, relative to the checkout
    docs: str  # the docs page, relative to the checkout
    page: str  # the dashboard page, relative to dashboard/
    icon: str  # the dashboard page's icon
    extra_datasets: bool = False  # also runs on the profile's extra datasets (real photos)
    # measured in a fresh worker process per case (imgbench.measure.server) when the profile's
    # process model is "worker"; False: in the session's process
    worker: bool = True
    # the stage's facts the engine acts on, stamped on each of its cases (``Case.disk``,
    # ``Case.task``, ``Case.screen``, ``Case.uncountable``): what its rounds read from disk
    # (a case of a built format reads the session's store), the task its rows name, whether its
    # rounds are a screen's (``loader_rounds``), why callgrind cannot count it
    disk: Literal["none", "dataset", "store"] = "none"
    task: str | None = None
    screen: bool = False
    uncountable: str | None = None
    # modules the worker server imports before it forks, besides the cases' requirements
    preload: tuple[str, ...] = ()

    def specs(self) -> tuple[LibrarySpec, ...]:
        """Every entry: the built-in ones, then those of the ``imgbench.<name>`` entry points."""
        from imgbench.library import catalog

        return catalog(self.name, load_attr(self.catalog), load_attr(self.spec_class))

    def unavailable_libraries(self) -> list[tuple[str, str]]:
        """(library, reason) for what cannot run here, including unusable registered entries."""
        from imgbench.library import plugin_problems

        listed = list(load_attr(self.unavailable)) if self.unavailable else []
        problems = plugin_problems(self.name, load_attr(self.catalog), load_attr(self.spec_class))
        return listed + problems

    def case_builder(self) -> Callable[[Profile], list[Case]]:
        builder: Callable[[Profile], list[Case]] = load_attr(self.cases)
        return builder


STAGES: tuple[Stage, ...] = (
    Stage(
        name="read",
        title="Readers",
        plan=ReadPlan,
        catalog="imgbench.readers.registry:READERS",
        spec_class="imgbench.readers.base:ReaderSpec",
        unavailable="imgbench.readers.registry:UNAVAILABLE",
        cases="imgbench.readers.cases:reader_cases",
        verify_command="imgbench.readers.verify_cli:verify_command",
        verify_name="readers",
        bench="benches/bench_readers.py",
        docs="docs/readers.md",
        page="views/readers.py",
        icon=":material/image:",
        extra_datasets=True,
        disk="dataset",
        preload=("imgbench.readers.cases", "imgbench.readers.verify"),
    ),
    Stage(
        name="augment",
        title="Augmentations",
        plan=AugmentPlan,
        catalog="imgbench.augment.registry:LIBRARIES",
        spec_class="imgbench.augment.registry:AugmentLibrary",
        unavailable="imgbench.augment.registry:UNAVAILABLE",
        cases="imgbench.augment.cases:augment_cases",
        verify_command="imgbench.augment.verify_cli:verify_command",
        verify_name="augment",
        bench="benches/bench_augment.py",
        docs="docs/augment.md",
        page="views/augment.py",
        icon=":material/auto_fix_high:",
        task="classification",
        preload=("imgbench.augment.cases", "imgbench.augment.verify"),
    ),
    Stage(
        name="format",
        title="Formats",
        plan=FormatPlan,
        catalog="imgbench.formats.registry:FORMATS",
        spec_class="imgbench.formats.base:FormatSpec",
        unavailable="imgbench.formats.registry:UNAVAILABLE",
        cases="imgbench.formats.cases:format_cases",
        verify_command="imgbench.formats.verify_cli:verify_command",
        verify_name="formats",
        bench="benches/bench_formats.py",
        docs="docs/formats.md",
        page="views/formats.py",
        icon=":material/storage:",
        disk="store",
        preload=("imgbench.formats.cases",),
    ),
    Stage(
        name="loader",
        title="Loaders",
        plan=LoaderPlan,
        catalog="imgbench.loaders.registry:LOADERS",
        spec_class="imgbench.loaders.registry:LoaderSpec",
        unavailable="imgbench.loaders.registry:UNAVAILABLE",
        cases="imgbench.loaders.cases:loader_cases",
        verify_command=None,
        verify_name="loaders",
        bench="benches/bench_loaders.py",
        docs="docs/loaders.md",
        page="views/loaders.py",
        icon=":material/conveyor_belt:",
        extra_datasets=True,
        # measured in a fresh fork of the worker server like every stage: the DataLoader's own
        # workers (and Ray's) are that fork's children, and die with its process group
        worker=True,
        disk="dataset",
        task="classification",
        screen=True,
        uncountable="loaders run worker processes and threads: wall time only",
    ),
)


def get_stage(name: str) -> Stage:
    for stage in STAGES:
        if stage.name == name:
            return stage
    raise ValueError(f"unknown stage {name!r}; known: {[s.name for s in STAGES]}")


def stage_cases(name: str, profile: Profile) -> list[Case]:
    """The cases a profile runs of one stage, each stamped with its stage's facts."""
    stage = get_stage(name)
    return [stamped(stage, case) for case in stage.case_builder()(profile)]


def stamped(stage: Stage, case: Case) -> Case:
    """``case`` with what the engine needs to know of its stage (``Case.disk`` and the rest):
    an S3 case reads no disk here (its data sits behind the server), a case of a built format
    reads the session's store. A case of another stage name that a stage plans (tjbench's
    ``native`` ceiling among the readers) keeps the defaults: it runs in the runner's process,
    reads no disk the row names, and has no task."""
    if case.stage != stage.name:
        return case
    disk = stage.disk
    if "s3" in (case.columns.get("storage"), case.params.get("storage")):
        disk = "none"
    elif disk != "none" and case.params.get("format") not in (None, "files"):
        disk = "store"
    return replace(
        case,
        disk=disk,
        task=stage.task,
        screen=stage.screen,
        uncountable=stage.uncountable,
        in_worker=stage.worker,
    )


# imported by the worker server before any fork: the registry and each stage's case machinery
# (the heap a case forks with is part of its speed: docs/measuring.md)
WORKER_PRELOAD: tuple[str, ...] = (
    "imgbench.stages",
    *(module for stage in STAGES for module in stage.preload),
)


def profile_imports(profile: Profile, environment: str) -> tuple[str, ...]:
    """What every case of ``profile`` in ``environment`` requires, across all stages, whatever
    this session selected.

    The server's import set is part of the heap a case is forked with, and the heap layout
    decides the speed of a decode: with the imports of one reader case alone, Pillow read the
    quick set at about 1,000 images/s, and inside the whole suite at about 1,250
    (docs/measuring.md, "One process is one layout"). The same profile imports the same set, so
    a case run by itself forks from the same server as inside the suite.
    """
    modules: set[str] = set()
    for stage in STAGES:
        with contextlib.suppress(Exception):  # a stage that cannot plan here imports nothing
            for case in stage_cases(stage.name, profile):
                if case.environment == environment:
                    modules.update(case.requires)
    return tuple(sorted(modules))


def worker_preload(required: Iterable[str]) -> tuple[str, ...]:
    """The worker server's imports, in order: the registry's, then ``required`` sorted."""
    return (*WORKER_PRELOAD, *sorted(set(required) - set(WORKER_PRELOAD)))


@dataclass(frozen=True)
class Planner:
    """One session's case planner (``imgbench.measure.planner.Planner``): the chosen profile,
    resolved once, and the choice that names its variant. The manager hands it to every worker
    fork in the job, which plans its case again from it without reading pyproject.toml."""

    choice: ProfileChoice
    profile: Profile

    @property
    def plans(self) -> Mapping[str, StagePlan]:
        return self.profile.plans

    @property
    def allocator_session(self) -> bool:
        return self.choice.allocator_session

    def cases(self, stage: str, settings: Settings) -> list[Case]:
        return session_cases(stage, self.choice, settings, self.profile)


def planner(choice: ProfileChoice, profile: Profile | None = None) -> Planner:
    """The session's planner (``profile``: ``choice`` resolved, when the caller has it)."""
    return Planner(choice, profile or choice.resolve())


def session_cases(
    name: str, choice: ProfileChoice, settings: Settings, profile: Profile | None = None
) -> list[Case]:
    """The cases one session plans of a stage (the runner and its workers alike): the chosen
    profile's (``profile`` when the caller resolved it already), in an allocator session with
    the allocator as a parameter, and in a disk session with its disk (``disk_pass``), so
    their ids never meet the main session's same cases."""
    cases = stage_cases(name, profile or choice.resolve())
    if choice.disk_session:
        cases = [replace(c, params={**c.params, DISK_PASS: choice.disk_session}) for c in cases]
    return with_allocator(cases, settings.allocator) if choice.allocator_session else cases
