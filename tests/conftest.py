"""Shared fixtures: small real image folders and a way to run pytest on bench files."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

# rich reads the width when a console is made: the same in an xdist worker and a terminal
os.environ.setdefault("COLUMNS", "200")

from imgbench.measure.settings import SETTINGS_ENV, WORKER_IMPORTS_ENV

# The sessions the tests start import only their selected cases' modules in the worker server:
# the profile's whole set (albumentations, torch, torchvision, ...: about 5 s) in every one made
# `make test` 17 min instead of 14. tests/measure/test_worker_history.py tests the default.
os.environ.setdefault(WORKER_IMPORTS_ENV, "selected")
# Correctness sessions keep every round: the host gate re-times rounds a busy host slowed (up to
# its budget per case), which checks nothing here. Its own tests turn it on with the option.
os.environ.setdefault(SETTINGS_ENV, "host_max_ratio=0")
# The sessions the tests start are a user's sessions, not pytest-xdist workers: pytest-benchmark
# reads this variable and warns and skips its JSON in a worker (`make test` runs with -n 2).
for _name in ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID"):
    os.environ.pop(_name, None)

# Tests that must not share the CPU with other tests: their assertions read timings (sampled
# shares of a profile, AU, the host gate's probes). `make test` runs them alone, after the others;
# measured under `pytest -n 2`: attribution shares 0.07 -> 0.13 instead of 0.6 -> 0.9, and the
# host gate's never-quiet test keeping a 2.0 ratio.
SERIAL = ("tests/measure/test_host.py", "tests/profiling/")
ROOT = Path(__file__).resolve().parents[1]


def pytest_itemcollected(item: pytest.Item) -> None:
    if str(Path(str(item.fspath)).relative_to(ROOT)).startswith(SERIAL):
        item.add_marker(pytest.mark.serial)
