"""The engine and the stages run without pytest: imgbench profile, lab scripts and the forked
worker measure through them, and a worker that imported pytest would carry it in every fork."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "imgbench"
ENGINE_AND_STAGES = ("measure", "readers", "augment", "formats", "loaders")


def test_no_engine_or_stage_file_imports_pytest() -> None:
    found = [
        f"{path.relative_to(SRC)}:{n}"
        for package in ENGINE_AND_STAGES
        for path in sorted((SRC / package).rglob("*.py"))
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if re.match(r"(import|from) _?pytest(\s|\.|$)", line.strip())
    ]
    assert not found, f"pytest imported by the engine or a stage: {found}"


def test_measuring_a_case_loads_neither_pytest_nor_typer(tiny_dataset: Path) -> None:
    """A real reader case measured in-process through the Manager, in a fresh interpreter."""
    code = f"""
import sys
from imgbench.measure.manager import Manager
from imgbench.measure.rounds import Measurement
from imgbench.controls import resolve
from imgbench.profiles import ProfileChoice
from imgbench.stages import session_cases, planner
choice = ProfileChoice("quick")
settings = resolve(choice.resolve(), {{"process_model": "in-process", "rounds": 2}})
case = next(c for c in session_cases("read", choice, settings) if c.library == "pillow")
manager = Manager(settings, planner(choice), {str(tiny_dataset)!r})
try:
    outcome = manager.measure(case)
finally:
    manager.close()
assert isinstance(outcome, Measurement), outcome
assert outcome.rounds == 2 and outcome.images_per_round > 0
loaded = sorted(m for m in ("pytest", "_pytest", "typer", "rich") if m in sys.modules)
print("loaded:", loaded)
"""
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    assert "loaded: []" in result.stdout
