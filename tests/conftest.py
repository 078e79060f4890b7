"""Shared fixtures: small real image folders and a way to run pytest on bench files."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

# rich reads the width when a console is made: the same in an xdist worker and a terminal
os.environ.setdefault("COLUMNS", "200")

from imgbench.controls import SETTINGS_ENV, WORKER_IMPORTS_ENV
from imgbench.measure.reference import REFERENCE_ENV
from imgbench.objectstore.server import (
    ENDPOINT_ENV,
    S3Server,
    endpoint_json,
    start_server,
    weed_missing,
)
from tests.shared_runs import ReaderRun, SessionRun, quick_run, reader_pair, shared_root

# The sessions the tests start import only their selected cases' modules in the worker server:
# the profile's whole set (albumentations, torch, torchvision, ...: about 5 s) in every one made
# `make test` 17 min instead of 14. tests/measure/test_worker_history.py tests the default.
os.environ.setdefault(WORKER_IMPORTS_ENV, "selected")
# Correctness sessions keep every round: the host gate re-times rounds a busy host slowed (up to
# its budget per case), which checks nothing here. Its own tests turn it on with the option.
# Nor do they calibrate: a round of one pass needs no untimed rounds to size it (one to three per
# case, a whole loader pass each); the calibration tests set their own floor.
os.environ.setdefault(SETTINGS_ENV, "host_max_ratio=0 min_round_s=0")
# Nor do they time the machine reference (a few seconds per session, checking nothing there):
# its own tests (tests/measure/test_reference.py) clear the variable where they want it.
os.environ.setdefault(REFERENCE_ENV, "off")
# The sessions the tests start are a user's sessions, not pytest-xdist workers: pytest-benchmark
# reads this variable and warns and skips its JSON in a worker (`make test` runs with -n 2).
for _name in ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID"):
    os.environ.pop(_name, None)
# The pytest sessions the tests start (directly, or through imgbench run/ci/profile) never use
# zarr's or anyio's pytest plugins, whose imports cost each start about 1.2 s here (2.3-2.9 s ->
# 1.3-1.7 s for an empty session): blocked in those sessions only, never in this one.
_BLOCKED = "-p no:zarr -p no:anyio"
if _BLOCKED not in os.environ.get("PYTEST_ADDOPTS", ""):
    os.environ["PYTEST_ADDOPTS"] = f"{os.environ.get('PYTEST_ADDOPTS', '')} {_BLOCKED}".strip()

# Tests that must not share the CPU with other tests: their assertions read timings (sampled
# shares of a profile, the host gate's probes). `make test` runs them alone, after the others;
# measured under `pytest -n 2`: attribution shares 0.07 -> 0.13 instead of 0.6 -> 0.9.
SERIAL = (
    "tests/measure/test_host.py",
    "tests/profiling/test_api.py",
    "tests/profiling/test_bounds.py",
    "tests/profiling/test_cli.py",
)
# Modules of 15 s or more (a full run's --durations), started first: pytest-xdist hands modules
# out in this order, so no worker is left running one of them alone at the end (a 36 s tail).
FIRST = (
    "tests/loaders/test_ray_data.py",
    "tests/dashboard/test_browser.py",
    "tests/envs/test_envs.py",
    "tests/loaders/test_tensorflow_env.py",
    "tests/cluster/test_ray_run.py",
    "tests/profiling/test_keras.py",
    "tests/augment/test_bench_e2e.py",
    "tests/dashboard/test_real_results.py",
    "tests/loaders/test_tf_tasks.py",
    "tests/compare/test_ci.py",
    "tests/objectstore/test_s3_bench.py",
    "tests/datasets/test_convert_memory.py",
    "tests/measure/test_worker.py",
    "tests/formats/test_mosaic_env.py",
)
ROOT = Path(__file__).resolve().parents[1]


def _module(item: pytest.Item) -> str:
    return str(Path(str(item.fspath)).relative_to(ROOT))


def pytest_itemcollected(item: pytest.Item) -> None:
    if _module(item).startswith(SERIAL):
        item.add_marker(pytest.mark.serial)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The long modules first, the rest in their usual order (a stable sort)."""
    rank = {name: i for i, name in enumerate(FIRST)}
    items.sort(key=lambda item: rank.get(_module(item), len(FIRST)))


def write_photo_like(path: Path, size: tuple[int, int], seed: int, fmt: str = "JPEG") -> None:
    """A small smooth-plus-texture image, enough for contract and harness tests."""
    rng = np.random.default_rng(seed)
    w, h = size
    y, x = np.mgrid[0:h, 0:w]
    base = np.stack(
        [
            128 + 100 * np.sin(x / (7 + seed % 5)),
            128 + 100 * np.cos(y / 11),
            (x + y) % 256,
        ],
        axis=-1,
    )
    noise = rng.normal(0, 6, size=base.shape)
    pixels = np.clip(base + noise, 0, 255).astype(np.uint8)
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(pixels).save(path, format=fmt, **({"quality": 90} if fmt == "JPEG" else {}))


@pytest.fixture(scope="session")
def tiny_dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Eight JPEGs and two PNGs in two class folders."""
    root = tmp_path_factory.mktemp("tiny-dataset")
    for i in range(8):
        write_photo_like(root / f"class_{i % 2}" / f"img_{i:02d}.jpg", (96 + 8 * i, 64), seed=i)
    for i in range(2):
        write_photo_like(root / "class_0" / f"png_{i}.png", (80, 60), seed=10 + i, fmt="PNG")
    return root


@pytest.fixture(scope="session")
def quick_session(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> SessionRun:
    """The quick profile's whole matrix on sixteen real photos, run once per test session and
    read by the stage, dashboard and answer tests (tests/shared_runs.py)."""
    return quick_run(shared_root(request.config, tmp_path_factory))


@pytest.fixture(scope="session")
def reader_runs(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, tiny_dataset: Path
) -> dict[str, ReaderRun]:
    """Two simultaneous sessions of the quick reader bench with pytest-benchmark's outputs, run
    once per test session (tests/shared_runs.py): the A/A pair and the outputs' tests read them."""
    return reader_pair(shared_root(request.config, tmp_path_factory), tiny_dataset)


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    """One SeaweedFS server for the whole test process (a start costs 4-10 s on 2 busy cores):
    in-process tests use it, and the bench sessions they start reach it through ``s3_env``.
    Only the tests of a session's own server (start, crash, loss, clean stop) start theirs.
    Its normal stop is checked when the session ends."""
    from tests.objectstore.conftest import assert_gone

    if reason := weed_missing():
        pytest.skip(reason)
    with start_server("imgbench-tests") as server:
        yield server
    assert_gone(server)


@pytest.fixture(scope="session")
def s3_env(s3_server: S3Server) -> dict[str, str]:
    """The variable that makes a bench session use the shared server instead of its own."""
    return {ENDPOINT_ENV: endpoint_json(s3_server.endpoint)}


def installed_package(root: Path, package: str, source: str, entry_points: str) -> Path:
    """A folder to put on PYTHONPATH holding ``package`` (one module) as an installed
    distribution with ``entry_points``: how another package registers imgbench libraries."""
    site = root / "site"
    (site / package).mkdir(parents=True)
    (site / package / "__init__.py").write_text(textwrap.dedent(source))
    info = site / f"{package}-0.1.dist-info"
    info.mkdir()
    name = package.replace("_", "-")
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(entry_points)
    return site


def run_pytest(
    args: list[str], cwd: Path, timeout: float = 300, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    """Run pytest in a fresh process, as a user would; the imgbench plugin loads by entry point."""
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
