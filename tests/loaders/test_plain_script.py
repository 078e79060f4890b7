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

import pytest

from imgbench.loaders import cases
from imgbench.loaders.plan import LoaderPlan
from imgbench.loaders.registry import pipeline_config
from imgbench.measure.case import Case
from imgbench.measure.settings import Settings
from imgbench.profiles import get_profile

SCRIPT = Path(__file__).resolve().parents[2] / "lab" / "plain_script.py"
PLAN = get_profile("quick").plan(LoaderPlan)
# runs the plain script as its own main module, then says whether anything imported imgbench
RUN_AND_REPORT = """
import contextlib, io, json, sys
script, sys.argv = sys.argv[1], [sys.argv[1], *sys.argv[2:]]
buffer = io.StringIO()
with contextlib.redirect_stdout(buffer):
    exec(compile(open(script).read(), script, "exec"), {"__name__": "__main__"})
result = json.loads(buffer.getvalue().strip().splitlines()[-1])
result["imgbench_imported"] = any(m.split(".")[0] == "imgbench" for m in sys.modules)
print(json.dumps(result))
"""


@pytest.fixture(scope="module")
def lab() -> ModuleType:
    spec = importlib.util.spec_from_file_location("plain_script", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["plain_script"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("epoch_passes", [1, 4])  # the folder's epochs; a long sampled epoch
def test_the_plain_loader_reads_the_whole_folder_without_imgbench(
    lab: ModuleType, photo_dir: Path, tmp_path: Path, epoch_passes: int
) -> None:
    text = lab.plain_text()
    assert "imgbench" not in text and not re.search(r"@[A-Z_]+@", text)  # every number filled
    script = tmp_path / "plain.py"
    script.write_text(text)
    case = cases.loader_case(
        "torch-dataloader", 0, plan=PLAN, config=pipeline_config("common-default")
    )
    config = lab.plain_config(case, photo_dir, Settings(), rounds=1, epoch_passes=epoch_passes)
    config |= {"batch_size": 4, "batches_per_round": 1, "warmup_batches": 1}
    out = subprocess.run(
        [sys.executable, "-c", RUN_AND_REPORT, str(script), json.dumps(config)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
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
