"""The imgbench package has no import cycles, and a benchmark session never imports the CLI stack.

A cycle makes a module's names depend on which module happens to be imported first, and it is
how the CLI (typer, rich) leaked into every read session: ``readers.verify`` and
``readers.verify_report`` imported each other. The graph is read statically with ``ast``, and
every import counts: at module level, inside functions (deferred) and under ``TYPE_CHECKING``
alike, since a deferred import only hides a circle until the day it runs first. The one edge
left out is a module's import of its own parent package (``from . import sibling``): a package
is always initialised before any of its submodules runs.
"""

from __future__ import annotations

import ast
import functools
import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = "imgbench"
STAGE_CASES = (
    "imgbench.readers.cases",
    "imgbench.augment.cases",
    "imgbench.formats.cases",
    "imgbench.loaders.cases",
)
CLI_ONLY = ("typer", "rich")  # what only `imgbench.cli` and the stages' verify CLIs may import

Graph = dict[str, set[str]]


def discover(src: Path, package: str) -> dict[str, tuple[Path, bool]]:
    """Every module of ``package`` under ``src``: name -> (file, is a package's ``__init__``)."""
    modules: dict[str, tuple[Path, bool]] = {}
    for path in sorted((src / package).rglob("*.py")):
        parts = path.relative_to(src).with_suffix("").parts
        if "__pycache__" in parts or not all(p.isidentifier() for p in parts):
            continue
        is_package = parts[-1] == "__init__"
        name = ".".join(parts[:-1] if is_package else parts)
        modules[name] = (path, is_package)
    return modules


def _resolve_relative(module: str, is_package: bool, level: int, target: str | None) -> str:
    """The absolute name of ``from <level dots><target> import ...`` written in ``module``."""
    parts = module.split(".") if is_package else module.split(".")[:-1]
    if level > 1:
        parts = parts[: len(parts) - (level - 1)]
    return ".".join([*parts, target] if target else parts)


def imported_names(node: ast.Import | ast.ImportFrom, module: str, is_package: bool) -> set[str]:
    """Absolute names an import statement in ``module`` may import (some are not modules).

    ``import a.b`` names ``a.b`` only: its parent packages are already in ``sys.modules`` while
    their submodules load, so counting them would report every ``__init__`` that re-exports.
    ``from a import b`` names ``a`` (its ``__init__`` runs) and ``a.b`` (if b is a submodule).
    """
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names}
    base = (
        _resolve_relative(module, is_package, node.level, node.module)
        if node.level
        else node.module or ""
    )
    return {base} | {f"{base}.{alias.name}" for alias in node.names}


def _ancestors(module: str) -> set[str]:
    parts = module.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts))}


def module_imports(
    module: str, is_package: bool, tree: ast.Module, known: Mapping[str, object]
) -> set[str]:
    """The ``known`` modules that ``module`` imports anywhere (deferred and ``TYPE_CHECKING``
    imports included), less its own parent packages."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            found |= imported_names(node, module, is_package)
    return {n for n in found if n in known and n != module and n not in _ancestors(module)}


@functools.cache
def parsed(path: Path) -> ast.Module:
    """The syntax tree of ``path``, parsed once per test process (the real package's modules are
    read by several tests; the checker's own packages are each in a fresh tmp_path)."""
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def import_graph(src: Path, package: str) -> Graph:
    """Module -> the package's modules it imports at import time."""
    modules = discover(src, package)
    graph: Graph = {}
    for name, (path, is_package) in modules.items():
        graph[name] = module_imports(name, is_package, parsed(path), modules)
    return graph


def strongly_connected(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components (iterative: no recursion limit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(sorted(component))
    return components


def _cycle_through(start: str, members: set[str], graph: Mapping[str, set[str]]) -> list[str]:
    """A shortest cycle from ``start`` back to itself inside one strongly connected component."""
    previous: dict[str, str] = {}
    frontier = [start]
    while frontier:
        next_frontier = []
        for node in frontier:
            for child in sorted(graph.get(node, set()) & members):
                if child == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(previous[path[-1]])
                    return [start, *reversed(path[:-1]), start]
                if child not in previous:
                    previous[child] = node
                    next_frontier.append(child)
        frontier = next_frontier
    raise AssertionError(f"{start} is in no cycle")  # unreachable for a real component


def find_cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """One concrete cycle (first module repeated at the end) per strongly connected component."""
    cycles = []
    for component in strongly_connected(graph):
        self_loop = component[0] in graph.get(component[0], set())
        if len(component) > 1 or self_loop:
            cycles.append(_cycle_through(component[0], set(component), graph))
    return cycles


def _describe(cycles: list[list[str]]) -> str:
    return "\n".join(" -> ".join(cycle) for cycle in cycles)


# -- the checker itself -----------------------------------------------------------------------


def _write_package(root: Path, files: Mapping[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")


def test_a_two_module_cycle_is_reported(tmp_path: Path) -> None:
    _write_package(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "from pkg import b\n",
            "pkg/b.py": "import pkg.a\n",
        },
    )
    graph = import_graph(tmp_path, "pkg")
    assert graph["pkg.a"] == {"pkg.b"} and graph["pkg.b"] == {"pkg.a"}
    assert find_cycles(graph) == [["pkg.a", "pkg.b", "pkg.a"]]


@pytest.mark.parametrize(
    "hidden",
    [
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.b import thing\n",
        "def later():\n    from . import b\n",
    ],
    ids=["type-checking", "deferred"],
)
def test_deferred_and_type_checking_imports_are_edges(tmp_path: Path, hidden: str) -> None:
    _write_package(
        tmp_path, {"pkg/__init__.py": "", "pkg/a.py": hidden, "pkg/b.py": "from .a import x\n"}
    )
    graph = import_graph(tmp_path, "pkg")
    assert graph["pkg.a"] == {"pkg.b"} and graph["pkg.b"] == {"pkg.a"}
    assert find_cycles(graph) == [["pkg.a", "pkg.b", "pkg.a"]]


def test_a_submodule_importing_its_own_package_is_no_edge(tmp_path: Path) -> None:
    """``from . import sibling`` runs after the package's ``__init__``: no circle through it."""
    _write_package(
        tmp_path,
        {
            "pkg/__init__.py": "from .a import A\n",
            "pkg/a.py": "from . import b\nA = 1\n",
            "pkg/b.py": "",
        },
    )
    graph = import_graph(tmp_path, "pkg")
    assert graph["pkg"] == {"pkg.a"} and graph["pkg.a"] == {"pkg.b"}
    assert find_cycles(graph) == []


def test_relative_and_guarded_imports_are_edges(tmp_path: Path) -> None:
    _write_package(
        tmp_path,
        {
            "pkg/__init__.py": "from . import sub\n",
            "pkg/sub/__init__.py": "from .x import X\n",
            "pkg/sub/x.py": """\
                try:
                    from ..y import Y
                except ImportError:
                    Y = None
                X = 1
                """,
            "pkg/y.py": """\
                import sys
                if sys.platform:
                    from pkg.sub import x
                """,
        },
    )
    graph = import_graph(tmp_path, "pkg")
    assert graph["pkg"] == {"pkg.sub"}
    assert graph["pkg.sub"] == {"pkg.sub.x"}
    assert graph["pkg.sub.x"] == {"pkg.y"}
    assert graph["pkg.y"] == {"pkg.sub", "pkg.sub.x"}
    (cycle,) = find_cycles(graph)
    assert cycle[0] == cycle[-1] and set(cycle) == {"pkg.sub", "pkg.sub.x", "pkg.y"}


# -- the real package -------------------------------------------------------------------------


@functools.cache
def _real_modules() -> dict[str, tuple[Path, bool]]:
    return discover(SRC, PACKAGE)


@functools.cache
def _real_graph() -> Graph:
    return import_graph(SRC, PACKAGE)


def test_the_package_is_found() -> None:
    graph = _real_graph()
    assert {"imgbench.cli", *STAGE_CASES} <= graph.keys()
    assert "imgbench.readers.verify" in graph["imgbench.readers.cases"]


def test_imgbench_has_no_import_cycles() -> None:
    cycles = find_cycles(_real_graph())
    assert not cycles, f"import cycles in {PACKAGE}:\n{_describe(cycles)}"


def _imports_anywhere(module: str) -> set[str]:
    """Every name ``module`` imports, at import time or later (inside functions too)."""
    path, is_package = _real_modules()[module]
    found: set[str] = set()
    for node in ast.walk(parsed(path)):
        if isinstance(node, ast.Import | ast.ImportFrom):
            found |= imported_names(node, module, is_package)
    return found


def _within(name: str, roots: Sequence[str]) -> bool:
    return any(name == root or name.startswith(f"{root}.") for root in roots)


@pytest.mark.parametrize("stage", ["readers", "augment", "formats"])
def test_stage_checks_never_reach_for_the_cli(stage: str) -> None:
    """The checks the cases use stay free of the CLI even in deferred imports."""
    cli_side = [*CLI_ONLY, "imgbench.console", "imgbench.cli", f"imgbench.{stage}.verify_cli"]
    reached = sorted(
        n for n in _imports_anywhere(f"imgbench.{stage}.verify") if _within(n, cli_side)
    )
    assert not reached, f"imgbench.{stage}.verify imports {reached}"


def test_only_the_cli_imports_the_verify_commands() -> None:
    commands = [f"imgbench.{stage}.verify_cli" for stage in ("readers", "augment", "formats")]
    graph_modules = _real_modules()
    assert set(commands) <= graph_modules.keys()
    importers = {
        module: sorted(name for name in _imports_anywhere(module) if _within(name, commands))
        for module in graph_modules
        if module not in ("imgbench.cli", *commands)
    }
    assert not {m: names for m, names in importers.items() if names}
    from imgbench.stages import STAGES

    named = {s.verify_command for s in STAGES if s.verify_command}
    assert named == {f"{command}:verify_command" for command in commands}
    cli_source = graph_modules["imgbench.cli"][0].read_text(encoding="utf-8")
    assert "s.verify_command) for s in STAGES" in cli_source  # the CLI registers what they name


# Imports the modules in order and records, for each CLI-only module, which of them was being
# imported when it was first imported and the stack that did it; the import goes on as usual.
_PROBE = """
import importlib, importlib.abc, json, sys, traceback
BLOCK = {block!r}
first = {{}}
current = [None]
class Spy(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        top = name.partition(".")[0]
        if top in BLOCK and top not in first:
            first[top] = {{
                "during": current[0],
                "stack": [
                    f"{{f.filename}}:{{f.lineno}}: {{f.line}}"
                    for f in traceback.extract_stack()[:-1]
                    if "importlib" not in f.filename and "<frozen" not in f.filename
                ],
            }}
        return None
sys.meta_path.insert(0, Spy())
for module in {modules!r}:
    current[0] = module
    importlib.import_module(module)
print(json.dumps(first))
"""


@pytest.fixture(scope="module")
def probed() -> dict[str, dict]:
    """One probe process (one interpreter start, not one per check): the four stages' case
    modules first, then ``imgbench.cli``; what each CLI-only module's first import came from."""
    code = _PROBE.format(block=CLI_ONLY, modules=[*STAGE_CASES, "imgbench.cli"])
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False
    )
    assert result.returncode == 0, result.stderr  # an import itself failed
    return json.loads(result.stdout.splitlines()[-1])


def test_stage_cases_do_not_import_the_cli_stack(probed: dict[str, dict]) -> None:
    """All four stages' case modules, imported before anything else: a CLI import by any of them
    is caught, and the stack names the module that made it."""
    by_cases = {
        top: "\n".join(found["stack"])
        for top, found in probed.items()
        if found["during"] in STAGE_CASES
    }
    assert not by_cases, "\n".join(f"{top} imported by:\n{s}" for top, s in by_cases.items())


def test_the_probe_sees_a_cli_import(probed: dict[str, dict]) -> None:
    """The check above can fail: ``imgbench.cli``, imported last, is caught importing typer."""
    assert probed["typer"]["during"] == "imgbench.cli", probed
    assert any("cli.py" in line for line in probed["typer"]["stack"]), probed


ENGINE_AND_STAGES = ("measure", "readers", "augment", "formats", "loaders")


def _imported_roots(path: Path) -> set[str]:
    """Top-level names of every module ``path`` imports, wherever the import sits."""
    roots = set()
    for node in ast.walk(parsed(path)):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


@pytest.mark.parametrize("package", ENGINE_AND_STAGES)
def test_the_engine_and_stage_code_never_import_pytest(package: str) -> None:
    """The engine measures outside pytest: stage code raises imgbench's Skip/CaseFailed, and the
    forked worker never loads pytest."""
    offenders = [
        str(path.relative_to(SRC))
        for path in sorted((SRC / PACKAGE / package).rglob("*.py"))
        if "pytest" in _imported_roots(path)
    ]
    assert offenders == []


def test_the_pytest_plugin_is_hooks_only_and_short() -> None:
    """Options, parametrizing, the fixture and rows' hand-over: the engine lives elsewhere."""
    plugin = SRC / PACKAGE / "pytest_plugin.py"
    assert len(plugin.read_text().splitlines()) < 350
    assert "pytest" in _imported_roots(plugin)
