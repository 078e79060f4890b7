"""Each loader kind the answer can recommend, exported from a real row and run in a fresh Python
process where imgbench cannot be imported: its batches have the recipe's shape, dtype and range;
and a script using it that ends holding an unfinished iterator, breaks out of its loop or gets
Ctrl-C exits with its own status, never aborts, and leaves no process behind.
(Speed is not asserted here: scripts/check_export.py times an export against its row.)"""

from __future__ import annotations

import ast
import importlib.util
import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from imgbench.export.choose import Choice, why_not_exportable
from imgbench.export.module import expected_batch, render
from tests.conftest import ROOT, write_photo_like
from tests.export.rows import dali_row, documented_row, loader_row

BATCH = 4
ENDING_BATCH = 16  # a longer task per thread-pool worker: the abort came in 1 run of 2 at 4
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
    # as their own authors' examples build them (imgbench.loaders.documented)
    "dali-2-as-documented": (lambda: dali_row(2, documented=True), "nvidia.dali"),
    "spdl-2-per-batch": (lambda: documented_row("spdl", 2), "spdl.pipeline"),
    "torchdata-nodes-thread-2-batch-map": (
        lambda: documented_row("torchdata-nodes", 2, method="thread"),
        "torchdata.nodes",
    ),
}
# the exit cases run once per loader's stop code: an as-documented shape stops its workers as its
# same-recipe kind does (the same generated stop code), so it is checked by the batch test alone
EXIT_KINDS = [k for k in KINDS if not k.endswith(("-as-documented", "-per-batch", "-batch-map"))]

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
def exported(folder: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """kind -> (module name, row) of every available kind's module, written once into one
    folder for the tests of this file."""
    out = tmp_path_factory.mktemp("exported")
    modules = {}
    for name, (make, needs) in KINDS.items():
        if _available(needs) is not None:
            continue
        row = make()
        assert why_not_exportable(row) is None, name
        path = out / f"{name.replace('-', '_')}.py"
        path.write_text(render(Choice(row)))
        modules[name] = (path.stem, row)
    return {"folder": out, "modules": modules}


@pytest.fixture(scope="module")
def outcomes(folder: Path, exported: dict[str, Any]) -> dict[str, Any]:
    """Every available kind's module run in one fresh process (one torch import for all), DALI
    last (a fork after its pipeline is built is not supported)."""
    out, modules = exported["folder"], exported["modules"]
    jobs = [(stem, str(out / f"{stem}.py"), str(folder), BATCH) for stem, _ in modules.values()]
    rows = {stem: row for stem, row in modules.values()}
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


# -- how a script using an exported module ends: (a) holding an unfinished iterator, (b) breaking
# out of its loop, then sys.exit(3), (c) Ctrl-C while iterating, uncaught (Python's KeyboardInterrupt
# status: killed by SIGINT, 130 in a shell) or caught with sys.exit(5). Each must end with its
# own status, without "terminate called" or "FATAL" (a worker thread still inside C++ code when
# the interpreter finalises aborts the process: status 134), and no process it started may
# outlive it.
EPOCHS = 200  # work still in flight when a case ends (125 batches of 16 over the 10 images)
SCRIPTS = {
    "unfinished": "it = iter(make_loader(ROOT, BATCH, epochs=EPOCHS))\nnext(it)\nreport()\n",
    "break": (
        "for batch in make_loader(ROOT, BATCH, epochs=EPOCHS):\n"
        "    report()\n"
        "    break\n"
        "sys.exit(3)\n"
    ),
    "ctrl-c": "for batch in make_loader(ROOT, BATCH, epochs=EPOCHS):\n    report()\n",
    "ctrl-c-caught": (
        "try:\n"
        "    for batch in make_loader(ROOT, BATCH, epochs=EPOCHS):\n"
        "        report()\n"
        "except KeyboardInterrupt:\n"
        "    sys.exit(5)\n"
    ),
}
EXPECTED = {"unfinished": 0, "break": 3, "ctrl-c": -signal.SIGINT, "ctrl-c-caught": 5}
# where the abort at exit was intermittent before the fix (1 to 3 runs of 3), 3 runs
RUNS = {("threadpool-2", "unfinished"): 3, ("torchdata-nodes-thread-2", "unfinished"): 3}
CASE_TIMEOUT_S = 60

# One fresh `python -I` process (imgbench blocked, as in CHILD) runs the import lines of each
# module once (most of a process's start: torch, torchvision, albumentations), then forks a
# process per case, in its own process group as a shell starts a command (Ctrl-C is SIGINT to
# that group). The case process imports its exported module and runs the case's script as a
# script's top level: it ends through the interpreter's own exit (atexit hooks, finalisation).
# The parent is the children's subreaper: a process a case started and left running is handed
# to it when the case exits, so what is still its child afterwards outlived the case.
ENDINGS = r"""
import ctypes, gc, importlib, importlib.abc, json, os, signal, sys, time
src, jobs, root = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
sys.path = [p for p in sys.path if p.rstrip("/") != src] + [os.getcwd()]

class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "imgbench" or name.startswith("imgbench."):
            raise ImportError(f"the exported module imports {name}")
        return None

sys.meta_path.insert(0, Block())
import psutil
PR_SET_CHILD_SUBREAPER = 36
assert ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1) == 0

def read(path):
    with open(path, errors="replace") as handle:
        return handle.read()

def ended(pid):
    done, status = os.waitpid(pid, os.WNOHANG)
    return os.waitstatus_to_exitcode(status) if done else None

def leftovers():
    "this process's children still running (a zombie is reaped): what a case left behind"
    left = []
    for child in psutil.Process().children():
        if child.status() == psutil.STATUS_ZOMBIE:
            os.waitpid(child.pid, 0)
        else:
            left.append(child)
    return left

imported = set()
for job in jobs:
    if job["module"] not in imported:
        exec(job["imports"], {})
        imported.add(job["module"])
    out, err = f"{job['id']}.out", f"{job['id']}.err"
    for path in (out, err):
        open(path, "w").close()
    sys.stdout.flush()
    gc.freeze()  # what is imported is no garbage: a case's exit does not walk it (half its CPU)
    pid = os.fork()
    if pid == 0:
        os.setpgid(0, 0)
        for fd, path in ((1, out), (2, err)):
            os.dup2(os.open(path, os.O_WRONLY), fd)
        break
    deadline, status = time.monotonic() + job["timeout"], None
    if job["case"].startswith("ctrl-c"):
        while not read(out) and time.monotonic() < deadline:
            if (status := ended(pid)) is not None:
                break
            time.sleep(0.01)
        if status is None:
            os.killpg(pid, signal.SIGINT)  # what Ctrl-C does
    while status is None and time.monotonic() < deadline:
        status = ended(pid)
        time.sleep(0.01)
    if status is None:
        os.killpg(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        status = "timeout"
    left = leftovers()
    for child in left:  # nothing left running on this machine
        child.kill()
        child.wait(10)
    print(json.dumps({**job, "status": status, "stderr": read(err)[-3000:],
                      "left": [c.pid for c in left], "iterated": bool(read(out))}), flush=True)
else:
    sys.exit(0)

# a case process: the case's script as the top level of a script, then the interpreter's exit
def report():
    print("a batch", flush=True)

make_loader = importlib.import_module(job["module"]).make_loader
ROOT, BATCH, EPOCHS = root, job["batch"], job["epochs"]
exec(job["script"])
"""


def _import_lines(module: Path) -> str:
    """The module's imports and the lines that set their environment, as the module runs them."""
    source = module.read_text()
    lines = []
    for node in ast.parse(source).body[1:]:  # after the docstring
        if not isinstance(node, ast.Import | ast.ImportFrom | ast.Expr):
            break
        if not (isinstance(node, ast.ImportFrom) and node.module == "__future__"):
            lines.append(ast.get_source_segment(source, node) or "")
    return "\n".join(lines)


@pytest.fixture(scope="module")
def endings(folder: Path, exported: dict[str, Any]) -> dict[tuple[str, str], list[dict]]:
    """(kind, case) -> what each run of the case gave, for every available kind, all from one
    process (a case costs about 0.5 s of CPU, most of it the interpreter's exit)."""
    if not sys.platform.startswith("linux"):
        pytest.skip("the cases' parent collects what they leave behind as Linux's subreaper")
    out, modules = exported["folder"], exported["modules"]
    imports = {kind: _import_lines(out / f"{stem}.py") for kind, (stem, _) in modules.items()}
    # torchvision's import makes every later case's exit slower: its modules' cases come last
    kinds = sorted(
        (kind for kind in modules if kind in EXIT_KINDS),
        key=lambda kind: "torchvision" in imports[kind],
    )
    jobs = [
        {
            "id": f"{modules[kind][0]}-{case}-{run}",
            "kind": kind,
            "case": case,
            "module": modules[kind][0],
            "imports": imports[kind],
            "script": script,
            "batch": ENDING_BATCH,
            "epochs": EPOCHS,
            "timeout": CASE_TIMEOUT_S,
        }
        for kind in kinds
        for case, script in SCRIPTS.items()
        for run in range(RUNS.get((kind, case), 1))
    ]
    result = subprocess.run(
        [sys.executable, "-I", "-c", ENDINGS, str(ROOT / "src"), json.dumps(jobs), str(folder)],
        capture_output=True,
        text=True,
        timeout=CASE_TIMEOUT_S * len(jobs) + 60,
        cwd=out,
    )
    found: dict[tuple[str, str], list[dict]] = {}
    for line in result.stdout.splitlines():
        if line.startswith("{"):
            run = json.loads(line)
            found.setdefault((run["kind"], run["case"]), []).append(run)
    assert result.returncode == 0, result.stderr[-3000:]
    return found


def _check_ending(kind: str, case: str, endings: dict[tuple[str, str], list[dict]]) -> None:
    reason = _available(KINDS[kind][1])
    if reason is not None:
        pytest.skip(reason)
    runs = endings[(kind, case)]
    assert len(runs) == RUNS.get((kind, case), 1)
    for run in runs:
        shown = {k: run[k] for k in ("id", "status", "left", "stderr")}
        assert run["iterated"], shown  # the first batch came
        assert run["status"] == EXPECTED[case], shown
        for abort in ("terminate called", "FATAL", "Fatal Python error", "Exception ignored"):
            assert abort not in run["stderr"], shown
        assert run["left"] == [], shown  # no process it started outlived it


@pytest.mark.parametrize("kind", EXIT_KINDS)
def test_a_script_ending_with_an_unfinished_iterator_exits_0(
    kind: str, endings: dict[tuple[str, str], list[dict]]
) -> None:
    _check_ending(kind, "unfinished", endings)


@pytest.mark.parametrize("kind", EXIT_KINDS)
def test_a_script_breaking_out_of_the_loop_exits_with_its_own_status(
    kind: str, endings: dict[tuple[str, str], list[dict]]
) -> None:
    _check_ending(kind, "break", endings)


@pytest.mark.parametrize("kind", EXIT_KINDS)
@pytest.mark.parametrize("case", ["ctrl-c", "ctrl-c-caught"])
def test_ctrl_c_exits_with_keyboardinterrupts_status_or_the_scripts(
    kind: str, case: str, endings: dict[tuple[str, str], list[dict]]
) -> None:
    _check_ending(kind, case, endings)
