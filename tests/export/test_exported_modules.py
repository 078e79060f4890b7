"""Each loader kind the answer can recommend, exported from a real row and run in a fresh Python
process where imgbench cannot be imported: its batches have the recipe's shape, dtype and range.
(Speed is not asserted here: scripts/check_export.py times an export against its row.)"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from imgbench.export.choose import Choice, why_not_exportable
from imgbench.export.module import expected_batch, render
from tests.conftest import ROOT, write_photo_like
from tests.export.rows import dali_row, loader_row

BATCH = 4
# name -> (the row's maker, the module it needs beyond the main env's, the recipe's dtype)
KINDS: dict[str, tuple[Any, str | None]] = {
    "dataloader-0-opencv-albumentations": (lambda: loader_row("torch-dataloader", 0), None),
    "dataloader-0-common-default": (
        lambda: loader_row("torch-dataloader", 0, "common-default"),
        None,
    ),
    "dataloader-2-uint8": (lambda: loader_row("torch-dataloader", 2, "uint8"), None),
    "dataloader-2-pillow-pil": (lambda: loader_row("torch-dataloader", 2, "pillow-pil"), None),
    "threadpool-2": (lambda: loader_row("threadpool", 2), None),
    "queue-feeder-2-torchvision": (lambda: loader_row("queue-feeder", 2, "torchvision"), None),
    "torchdata-nodes-thread-2": (
        lambda: loader_row("torchdata-nodes", 2, method="thread"),
        "torchdata.nodes",
    ),
    "spdl-2": (lambda: loader_row("spdl", 2), "spdl.pipeline"),
    "dali-2": (lambda: dali_row(2), "nvidia.dali"),
}

# run in the child: imgbench off the path (the editable install's folder) and blocked, then
# each exported module imported by name from the folder it was written to and iterated for two
# batches
CHILD = r"""
import importlib, importlib.abc, importlib.util, json, os, sys
src = sys.argv[1]
sys.path = [p for p in sys.path if p.rstrip("/") != src] + [os.getcwd()]
found = importlib.util.find_spec("imgbench")

class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "imgbench" or name.startswith("imgbench."):
            raise ImportError(f"the exported module imports {name}")
        return None

sys.meta_path.insert(0, Block())
for name, path, root, batch in json.loads(sys.argv[2]):
    try:
        module = importlib.import_module(name)  # as a user imports it (spawn re-imports it)
        loader = module.make_loader(root, batch, epochs=2)
        iterator = iter(loader)
        batches = [next(iterator) for _ in range(2)]
        del iterator, loader
        images, labels = batches[-1]
        result = {
            "shape": list(images.shape),
            "dtype": str(images.dtype).removeprefix("torch."),
            "min": float(images.min()),
            "max": float(images.max()),
            "labels": sorted({int(v) for b in batches for v in b[1]}),
            "label_dtype": str(labels.dtype).removeprefix("torch."),
        }
    except BaseException as exc:
        result = {"error": f"{type(exc).__name__}: {exc}"}
    result.update(name=name, imgbench_found=found is not None)
    print(json.dumps(result), flush=True)
"""


def _available(module: str | None) -> str | None:
    if module is None:
        return None
    try:
        return None if importlib.util.find_spec(module) else f"{module} is not installed"
    except ModuleNotFoundError:
        return f"{module} is not installed"


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Ten JPEGs of different sizes in two class folders."""
    root = tmp_path_factory.mktemp("export-folder")
    for i in range(10):
        size = (160 + 24 * i, 120 + 10 * (i % 3))
        write_photo_like(root / f"class_{i % 2}" / f"img_{i:02d}.jpg", size, seed=i)
    return root


@pytest.fixture(scope="module")
def outcomes(folder: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Every available kind's module written, then all run in one fresh process (one torch
    import for all), DALI last (a fork after its pipeline is built is not supported)."""
    out = tmp_path_factory.mktemp("exported")
    jobs, rows = [], {}
    for name, (make, needs) in KINDS.items():
        if _available(needs) is not None:
            continue
        row = make()
        assert why_not_exportable(row) is None, name
        path = out / f"{name.replace('-', '_')}.py"
        path.write_text(render(Choice(row)))
        jobs.append((path.stem, str(path), str(folder), BATCH))
        rows[path.stem] = row
    result = subprocess.run(
        [sys.executable, "-I", "-c", CHILD, str(ROOT / "src"), json.dumps(jobs)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=out,
    )
    lines = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    found = {line["name"]: (line, rows[line["name"]]) for line in lines}
    assert found, result.stderr[-3000:]
    return found


@pytest.mark.parametrize("kind", list(KINDS))
def test_an_exported_module_runs_without_imgbench(kind: str, outcomes: dict[str, Any]) -> None:
    reason = _available(KINDS[kind][1])
    if reason is not None:
        pytest.skip(reason)
    result, row = outcomes[kind.replace("-", "_")]
    assert "error" not in result, result
    assert result["imgbench_found"] is False
    shape, dtype = expected_batch(row, BATCH)
    assert tuple(result["shape"]) == shape
    assert result["dtype"] == dtype
    if dtype == "uint8":
        assert 0 <= result["min"] < result["max"] <= 255
    else:  # ImageNet-normalised: (0 - 0.485) / 0.229 .. (1 - 0.406) / 0.225
        assert -2.2 < result["min"] < 0 < result["max"] < 2.7
    assert result["label_dtype"] == "int64"
    assert set(result["labels"]) <= {0, 1}
