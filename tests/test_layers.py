"""The house in floors: every import in ``src/imgbench`` points to its own floor or one below.

One list, ground floor first. A module's floor is its longest prefix in ``LAYERS``; every module
must have one (a new room is placed on purpose). Imports are read from the source, all of them:
module-level, deferred (inside a function) and ``TYPE_CHECKING`` ones, since each one is a
dependency the next change has to respect. Registries wire upward by ``"module:attr"`` strings
(loaded at run time), which is the point: the lower floor names no higher module in an import.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.test_import_graph import discover, import_graph

SRC = Path(__file__).resolve().parents[1] / "src"

LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "utilities",
        (
            "imgbench.atomic",
            "imgbench.attrs",
            "imgbench.console",
            "imgbench.errors",
            "imgbench.paths",
            "imgbench.pids",
            "imgbench.unix_sockets",
            "imgbench.machine",
            "imgbench.installer",
            "imgbench.envs",
            "imgbench.library",
            "imgbench.plan",
            "imgbench.iters",
        ),
    ),
    # what a run reads and writes: datasets, result rows, the emulated disks' catalogue
    ("data", ("imgbench.datasets", "imgbench.results", "imgbench.disks.catalog")),
    ("engine", ("imgbench.measure",)),
    # real servers and devices a run starts and stops: S3, emulated disks
    ("services", ("imgbench.objectstore", "imgbench.disks")),
    (
        "control plane",
        (
            "imgbench.profiles",
            "imgbench.stages",
            "imgbench.controls",
            "imgbench.readers.plan",
            "imgbench.augment.plan",
            "imgbench.formats.plan",
            "imgbench.loaders.plan",
            "imgbench.final.plan",
        ),
    ),
    (
        "stages",
        (
            "imgbench.readers",
            "imgbench.augment",
            "imgbench.formats",
            "imgbench.loaders",
        ),
    ),
    (
        "reading side",
        ("imgbench.answer", "imgbench.report", "imgbench.compare", "imgbench.export"),
    ),
    (
        "front doors",
        (
            "imgbench",  # the package's own __init__: the public API
            "imgbench.cli",
            "imgbench.commands",
            "imgbench.pytest_plugin",
            "imgbench.pytest_options",
            "imgbench.benchmark_shim",
            "imgbench.sessions",
            "imgbench.cluster",
            "imgbench.run_plan",
            "imgbench.progress",
            "imgbench.run_answer",
            "imgbench.session_output",
            "imgbench.libraries",
            "imgbench.final",
            "imgbench.profiling",
        ),
    ),
)


def floor_of(module: str) -> int | None:
    """The floor of ``module``: the floor of its longest prefix in ``LAYERS``."""
    best: tuple[int, int] | None = None  # (prefix length, floor)
    for floor, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            # "imgbench" is the package's own __init__, not a prefix of every module
            inside = prefix != "imgbench" and module.startswith(prefix + ".")
            if (module == prefix or inside) and (best is None or len(prefix) > best[0]):
                best = (len(prefix), floor)
    return None if best is None else best[1]


def upward_imports(src: Path) -> list[str]:
    """``importer (floor) -> imported (floor)`` for each import of a higher floor, read from the
    import graph ``tests/test_import_graph.py`` builds (every import, wherever it sits). A package
    whose submodule the same module imports is that statement's ``from pkg import sub``: the
    submodule stands for it."""
    found = []
    for module, targets in import_graph(src, "imgbench").items():
        here = floor_of(module)
        for target in targets - {t.rpartition(".")[0] for t in targets}:
            there = floor_of(target)
            if here is not None and there is not None and there > here:
                found.append(f"{module} ({LAYERS[here][0]}) imports {target} ({LAYERS[there][0]})")
    return sorted(found)


def test_every_module_has_a_floor() -> None:
    assert [m for m in discover(SRC, "imgbench") if floor_of(m) is None] == []


def test_every_import_points_down() -> None:
    assert upward_imports(SRC) == []


@pytest.mark.parametrize(
    "statement",
    [
        "from imgbench.stages import STAGES\n",  # at module level
        "def f():\n    from imgbench.profiles import get_profile\n",  # deferred
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import imgbench.loaders.plan\n",
        "from imgbench import cli\n",  # a submodule through its package
        "from ..readers import cases\n",  # relative
    ],
)
def test_an_engine_module_importing_a_higher_floor_fails(tmp_path: Path, statement: str) -> None:
    """The check is not vacuous: a copy of the tree with one upward import in the engine."""
    import shutil

    shutil.copytree(SRC / "imgbench", tmp_path / "imgbench")
    (tmp_path / "imgbench" / "measure" / "upward.py").write_text(statement)
    found = upward_imports(tmp_path)
    assert len(found) == 1 and found[0].startswith("imgbench.measure.upward (engine) imports")


def stage_names_in_the_engine(src: Path, stages: set[str]) -> list[str]:
    """``file:line`` of every string constant in ``imgbench/measure`` equal to a stage's name."""
    found = []
    for path in sorted((src / "imgbench" / "measure").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and node.value in stages:
                found.append(f"{path.relative_to(src)}:{node.lineno}: {node.value!r}")
    return found


def test_the_engine_knows_no_stage_by_name() -> None:
    """The stage facts the engine acts on are stamped on the cases by the registry."""
    from imgbench.stages import STAGES

    stages = {s.name for s in STAGES}
    assert stages == {"read", "augment", "format", "loader"}
    assert stage_names_in_the_engine(SRC, stages) == []
