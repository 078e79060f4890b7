"""lab/plain_script.py: its plain loader is standalone and runs, and it says which rows it cannot
write as a plain script."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from imgbench.loaders import cases
from imgbench.loaders.plan import LoaderPlan
from imgbench.loaders.registry import pipeline_config
from imgbench.measure.case import Case
from imgbench.measure.settings import Settings
from imgbench.profiles import get_profile

SCRIPT = Path(__file__).resolve().parents[2] / "lab" / "plain_script.py"
PLAN = get_profile("quick").plan(LoaderPlan)
EPOCH_PASSES = (1, 4)  # the folder's epochs; a long sampled epoch
# runs the plain script as its own main module once per config (one interpreter for both: a
# start and torch's import each), then says whether anything imported imgbench
RUN_AND_REPORT = """
import contextlib, io, json, sys
script, configs = sys.argv[1], json.loads(sys.argv[2])
results = []
for config in configs:
    sys.argv = [script, json.dumps(config)]
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        exec(compile(open(script).read(), script, "exec"), {"__name__": "__main__"})
    results.append(json.loads(buffer.getvalue().strip().splitlines()[-1]))
imported = any(m.split(".")[0] == "imgbench" for m in sys.modules)
print(json.dumps([{**r, "imgbench_imported": imported} for r in results]))
"""


@pytest.fixture(scope="module")
def lab() -> ModuleType:
    spec = importlib.util.spec_from_file_location("plain_script", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["plain_script"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def plain_runs(
    lab: ModuleType, photo_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> dict[int, dict[str, Any]]:
    """The plain script, written out and run in a fresh interpreter at each of EPOCH_PASSES."""
    text = lab.plain_text()
    assert "imgbench" not in text and not re.search(r"@[A-Z_]+@", text)  # every number filled
    work = tmp_path_factory.mktemp("plain-script")
    script = work / "plain.py"
    script.write_text(text)
    case = cases.loader_case(
        "torch-dataloader", 0, plan=PLAN, config=pipeline_config("common-default")
    )
    configs = []
    for epoch_passes in EPOCH_PASSES:
        config = lab.plain_config(case, photo_dir, Settings(), rounds=1, epoch_passes=epoch_passes)
        configs.append(config | {"batch_size": 4, "batches_per_round": 1, "warmup_batches": 1})
    out = subprocess.run(
        [sys.executable, "-c", RUN_AND_REPORT, str(script), json.dumps(configs)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=work,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    results = json.loads(out.stdout.strip().splitlines()[-1])
    return dict(zip(EPOCH_PASSES, results, strict=True))


@pytest.mark.parametrize("epoch_passes", EPOCH_PASSES)
def test_the_plain_loader_reads_the_whole_folder_without_imgbench(
    plain_runs: dict[int, dict[str, Any]], epoch_passes: int
) -> None:
    result = plain_runs[epoch_passes]
    assert result["images"] == 16 and len(result["images_per_s"]) == 1
    assert result["images_per_s"][0] > 0
    assert result["imgbench_imported"] is False


def test_rows_without_a_plain_twin_say_why(lab: ModuleType) -> None:
    def case(library: str, pipeline: str, accelerator: int | None = None) -> Case:
        config = pipeline_config(pipeline)
        return cases.loader_case(library, 2, plan=PLAN, config=config, accelerator=accelerator)

    assert lab.plain_problem(case("torch-dataloader", "common-default")) is None
    assert lab.plain_problem(case("torch-dataloader", "uint8")) is None
    assert "only the DataLoader" in lab.plain_problem(case("threadpool", "default"))
    assert "format lmdb" in lab.plain_problem(case("torch-dataloader", "lmdb"))
    assert "pillow-simd environment" in lab.plain_problem(
        case("torch-dataloader", "pillow-simd-common-default")
    )
    assert "emulated accelerator" in lab.plain_problem(
        case("torch-dataloader", "default", accelerator=100)
    )
