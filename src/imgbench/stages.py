"""The four stages, each registered once: everything that lists stages reads them from here.

The pytest plugin plans a bench module's cases from its ``pytest.mark.imgbench(stage=NAME)``,
``imgbench env`` lists each stage's catalog, ``imgbench verify NAME`` comes from ``verify``,
``imgbench run`` runs the stages with ``extra_datasets`` on the profile's extra datasets, and the
dashboard shows one page per stage. Adding a stage is one entry here plus the files it names.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from imgbench.attrs import load_attr
from imgbench.augment.plan import AugmentPlan
from imgbench.formats.plan import FormatPlan
from imgbench.loaders.plan import LoaderPlan
from imgbench.measure.case import Case, with_allocator
from imgbench.plan import StagePlan
from imgbench.readers.plan import ReadPlan
from imgbench.storage.profiles import DISK_PASS

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
    ),
)


def get_stage(name: str) -> Stage:
    for stage in STAGES:
        if stage.name == name:
            return stage
    raise ValueError(f"unknown stage {name!r}; known: {[s.name for s in STAGES]}")


def stage_cases(name: str, profile: Profile) -> list[Case]:
    """The cases a profile runs of one stage."""
    return get_stage(name).case_builder()(profile)


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
