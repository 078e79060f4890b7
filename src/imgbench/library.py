"""What every stage's registry entry declares, and how a plan picks entries from a registry.

Each stage's spec class (ReaderSpec, AugmentLibrary, FormatSpec, LoaderSpec) extends
:class:`LibrarySpec` with what only that stage needs. The harness turns ``requires`` and
``check`` into a skipped row with the reason, so no adapter writes its own skip logic.
"""

from __future__ import annotations

import functools
import importlib
import sys
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from importlib.metadata import EntryPoint
from typing import Literal, TypeVar

from imgbench.errors import one_line

# How a plan picks a stage's libraries: "default" = every entry whose spec has default=True,
# "quick" = those with quick=True, "all" = every entry, or explicit keys (a spec's ``key``,
# or its ``library`` for all of that library's variants).
Selection = Literal["default", "quick", "all"] | tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class LibrarySpec:
    """One registry entry: enough to list, select and skip a library without importing it."""

    library: str  # the row's library column, e.g. "opencv"
    variant: str = ""  # how the library is called, e.g. "imdecode-rgb"
    requires: tuple[str, ...] = ()  # importable modules the cases need
    dist: str | None = None  # distribution whose version rows record (None: part of Python)
    environment: str = "main"  # the venv its cases run in (imgbench.envs)
    note: str = ""
    quick: bool = False  # in plans that select "quick"
    default: bool = True  # in plans that select "default" (False: "all" or by name only)
    check: Callable[[], str | None] | None = None  # a further availability check: reason or None

    @property
    def key(self) -> str:
        """What plans and ``imgbench verify`` name the entry by."""
        return f"{self.library}/{self.variant}" if self.variant else self.library

    def unmet_requirement(self) -> str | None:
        """Why this library cannot run here, or None."""
        reason = wrong_environment(self.environment, self.dist)
        if reason is None:
            reason = missing_module(self.library, self.requires)
        if reason is None and self.check is not None:
            reason = self.check()
        return reason


def wrong_environment(environment: str, dist: str | None = None) -> str | None:
    """Why an isolated environment's library cannot run in this interpreter (its env is not
    built, or this is another env), or None; the main env's libraries go by their imports."""
    from imgbench.envs import environment_problem, replaced_here

    if environment == "main":
        # in an env that replaces the dist's import package, the main entry would measure the
        # replacement under the original's name (PIL is pillow-simd there)
        env = replaced_here(dist)
        return f"{dist}: the {env} environment replaces its module" if env else None
    return environment_problem(environment)


def missing_module(library: str, modules: Iterable[str]) -> str | None:
    """The first of ``modules`` that does not import, as a skip reason; None when all do."""
    for module in modules:
        try:
            importlib.import_module(module)
        except Exception as exc:  # an ImportError, or a library broken at import
            return f"{library}: cannot import {module} ({one_line(exc)})"
    return None


S = TypeVar("S", bound=LibrarySpec)


def select(specs: Iterable[S], selection: Selection) -> tuple[S, ...]:
    """The entries a plan's ``libraries`` picks, in registry order; unknown names are an error."""
    specs = tuple(specs)
    if selection == "all":
        return specs
    if selection == "default":
        return tuple(s for s in specs if s.default)
    if selection == "quick":
        return tuple(s for s in specs if s.quick)
    names = set(selection)
    known = {s.key for s in specs} | {s.library for s in specs}
    unknown = sorted(names - known)
    if unknown:
        raise ValueError(f"unknown libraries {unknown}; known: {sorted(known)}")
    return tuple(s for s in specs if s.key in names or s.library in names)


def find(specs: Iterable[S], key: str, what: str) -> S:
    """The entry named ``key`` (its ``key``), or a KeyError that lists the known ones."""
    specs = tuple(specs)
    for spec in specs:
        if spec.key == key:
            return spec
    raise KeyError(f"unknown {what} {key!r}; known: {[s.key for s in specs]}")


ENTRY_POINT_GROUP = "imgbench.{stage}"  # e.g. imgbench.read: other packages' registry entries


def catalog(stage: str, builtin: Iterable[S], kind: type[S]) -> tuple[S, ...]:
    """A stage's registry: the built-in entries, then those other packages register.

    A package adds a library with one adapter module and one entry point in the group
    ``imgbench.<stage>`` whose object is a spec (or a sequence of specs) of the stage's kind::

        [project.entry-points."imgbench.read"]
        mydecoder = "mypackage.imgbench_adapter:SPEC"

    An entry point that does not load, or loads something else, is left out with a warning
    that names it, and ``imgbench env`` lists it as unavailable with the reason.
    """
    specs, problems = _plugins(stage, tuple(builtin), kind)
    for name, reason in problems:
        warnings.warn(f"imgbench: registry entry {name} left out: {reason}", stacklevel=2)
    return specs


def plugin_problems(stage: str, builtin: Iterable[S], kind: type[S]) -> list[tuple[str, str]]:
    """(entry point, reason) for every registered entry of ``stage`` that cannot be used."""
    return _plugins(stage, tuple(builtin), kind)[1]


@functools.lru_cache(maxsize=64)
def _entry_points(group: str, path: tuple[str, ...]) -> tuple[EntryPoint, ...]:
    """Entry points of ``group``, found once per ``sys.path`` (a scan costs ~50 ms here)."""
    from importlib.metadata import entry_points

    return tuple(sorted(entry_points(group=group), key=lambda p: p.name))


def _plugins(
    stage: str, builtin: tuple[S, ...], kind: type[S]
) -> tuple[tuple[S, ...], list[tuple[str, str]]]:
    found = list(builtin)
    keys = {s.key for s in found}
    problems: list[tuple[str, str]] = []
    group = ENTRY_POINT_GROUP.format(stage=stage)
    for point in _entry_points(group, tuple(sys.path)):
        name = f"{point.name} = {point.value} ({group})"
        try:
            loaded = point.load()
        except Exception as exc:
            problems.append((name, f"does not load: {one_line(exc)}"))
            continue
        entries = loaded if isinstance(loaded, list | tuple) else [loaded]
        for spec in entries:
            if not isinstance(spec, kind):
                problems.append((name, f"expected a {kind.__name__}, got {type(spec).__name__}"))
            elif spec.key in keys:
                problems.append((name, f"{spec.key!r} is registered already"))
            else:
                keys.add(spec.key)
                found.append(spec)
    return tuple(found), problems
