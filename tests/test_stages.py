"""Every stage is registered once, and everything that lists stages reads that registration."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from imgbench.library import LibrarySpec, select
from imgbench.plan import StagePlan
from imgbench.profiles import BUILTIN
from imgbench.stages import STAGES, get_stage, load_attr

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("stage", STAGES, ids=lambda s: s.name)
def test_stage_entry_names_files_that_exist(stage) -> None:  # type: ignore[no-untyped-def]
    bench = ROOT / stage.bench
    assert bench.is_file(), bench
    marker = ast.parse(bench.read_text())
    assert f"stage='{stage.name}'" in ast.unparse(marker), "the bench's imgbench marker"
    assert (ROOT / stage.docs).is_file()
    assert (ROOT / "dashboard" / stage.page).is_file()
    assert issubclass(stage.plan, StagePlan) and stage.plan.stage == stage.name
    assert dataclasses.is_dataclass(stage.plan)
    assert all(isinstance(s, load_attr(stage.spec_class)) for s in stage.specs())
    assert all(isinstance(s, LibrarySpec) for s in stage.specs())
    assert callable(stage.case_builder())


def test_every_profile_has_a_plan_of_the_right_kind_for_every_stage() -> None:
    for profile in BUILTIN.values():
        for stage in STAGES:
            plan = profile.plan(stage.plan)
            assert isinstance(plan, stage.plan)


def test_every_registered_library_is_in_the_default_plan_unless_its_spec_says_no() -> None:
    default = BUILTIN["default"]
    for stage in STAGES:
        libraries = {c.library for c in stage.case_builder()(default)}
        wanted = {s.library for s in stage.specs() if s.default}
        assert wanted <= libraries, (stage.name, wanted - libraries)


def test_select() -> None:
    specs = get_stage("read").specs()
    assert select(specs, "all") == tuple(specs)
    quick = select(specs, "quick")
    assert quick and all(s.quick for s in quick)
    pillow = select(specs, ("pillow",))
    assert {s.library for s in pillow} == {"pillow"} and len(pillow) > 1
    assert select(specs, ("opencv/imdecode-rgb",))[0].key == "opencv/imdecode-rgb"
    with pytest.raises(ValueError, match="nope"):
        select(specs, ("nope",))


def test_no_code_branches_on_a_profile_name() -> None:
    """A profile's behaviour comes from its plans: ``profile.name ==`` appears nowhere."""
    offenders = []
    for path in (ROOT / "src" / "imgbench").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Compare) and any(
                isinstance(side, ast.Attribute)
                and side.attr == "name"
                and isinstance(side.value, ast.Name)
                and side.value.id == "profile"
                for side in (node.left, *node.comparators)
            ):
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not offenders


def test_unknown_stage_marker_is_a_usage_error(tmp_path: Path) -> None:
    import subprocess
    import sys

    bench = tmp_path / "bench_bad.py"
    bench.write_text(
        "import pytest\n"
        "pytestmark = pytest.mark.imgbench(stage='nope')\n"
        "def test_x(imgbench, imgbench_case):\n"
        "    imgbench.measure(imgbench_case)\n"
    )
    result = subprocess.run(
        [sys.executable, "-m", "pytest", str(bench), "-p", "no:cacheprovider", "-q",
         f"--imgbench-results={tmp_path}"],
        capture_output=True, text=True, cwd=tmp_path, timeout=120,
    )  # fmt: skip
    assert result.returncode != 0
    assert "unknown imgbench stage 'nope'" in result.stdout + result.stderr
