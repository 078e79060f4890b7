"""The probe reader (a toy registered by entry point that notes what its process looks like)
and the engine's ``Manager`` measuring its cases on a real worker server, no pytest session."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from imgbench.controls import resolve
from imgbench.measure import server
from imgbench.measure.case import Case
from imgbench.measure.manager import Manager, Outcome
from imgbench.profiles import ProfileChoice
from imgbench.stages import planner, session_cases
from tests.conftest import installed_package

PROBE = '''
import io
import json
import os
import signal
import sys

import numpy as np
from PIL import Image

from imgbench.readers.base import BytesReader, ReaderSpec

CALLS = {"decode": 0}
SEEN = {}


class Probe(BytesReader):
    """A real decoder that also notes what its process looks like."""

    def decode(self, data: bytes) -> np.ndarray:
        CALLS["decode"] += 1
        if CALLS["decode"] == 1:  # the first call of this process: before any other case's
            SEEN.update(
                pid=os.getpid(),
                hash_seed=os.environ.get("PYTHONHASHSEED"),
                ld_preload=os.environ.get("LD_PRELOAD", ""),
                malloc={k: v for k, v in os.environ.items() if k.startswith("MALLOC_")},
                personality=int(open("/proc/self/personality").read(), 16),
                modules=[m for m in os.environ.get("PROBE_MODULES", "").split(",")
                         if m and m in sys.modules],
                late=os.environ.get("PROBE_LATE"),
                runner=os.environ.get("IMGBENCH_RUNNER_PID"),
            )
            with open(os.environ["PROBE_LOG"], "a") as log:
                log.write(json.dumps(SEEN) + "\\n")
        with Image.open(io.BytesIO(data)) as image:
            return np.ascontiguousarray(np.asarray(image.convert("RGB")))


class Crash(BytesReader):
    def decode(self, data: bytes) -> np.ndarray:
        os.kill(os.getpid(), signal.SIGSEGV)
        raise AssertionError("unreachable")


class Hang(BytesReader):
    """Starts a process of its own (as a DataLoader starts workers), says so, and never ends."""

    def decode(self, data: bytes) -> np.ndarray:
        import subprocess
        import sys
        import time

        helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        with open(os.environ["PROBE_LOG"], "a") as log:
            log.write(json.dumps({"case": os.getpid(), "helper": helper.pid}) + "\\n")
        time.sleep(600)
        raise AssertionError("unreachable")


PROBE = ReaderSpec(library="probe", variant="env", adapter=__name__ + ":Probe", quick=True)
CRASH = ReaderSpec(library="crash", variant="segv", adapter=__name__ + ":Crash", quick=True)
HANG = ReaderSpec(library="hang", variant="forever", adapter=__name__ + ":Hang", quick=True)
'''

PROFILE = """
[tool.imgbench.profiles.probe]
base = "quick"
rounds = 2
warmup_rounds = 1
[tool.imgbench.profiles.probe.read]
libraries = ["probe", "crash", "pillow"]
codecs = ["jpeg", "png"]

[tool.imgbench.profiles.hang]
base = "probe"
[tool.imgbench.profiles.hang.read]
libraries = ["hang"]
codecs = ["jpeg"]

# the probe profile with light stages beside the reads: what its server imports for the whole
# profile is PIL and lmdb (the formats stage's), not torch, torchvision and albumentations
[tool.imgbench.profiles.probe-imports]
base = "probe"
[tool.imgbench.profiles.probe-imports.augment]
libraries = ["pillow"]
[tool.imgbench.profiles.probe-imports.format]
libraries = ["lmdb"]
[tool.imgbench.profiles.probe-imports.loader]
libraries = []
"""


@pytest.fixture
def probe_env(tmp_path: Path) -> dict[str, str]:
    site = installed_package(
        tmp_path,
        "probe_imgbench",
        PROBE,
        "[imgbench.read]\nprobe = probe_imgbench:PROBE\ncrash = probe_imgbench:CRASH\n"
        "hang = probe_imgbench:HANG\n",
    )
    (tmp_path / "pyproject.toml").write_text(PROFILE)
    # as importing cv2 does (LD_LIBRARY_PATH): the runner's environment changes after it started
    (site / "late_env_plugin.py").write_text(
        "import os\n\ndef pytest_sessionstart(session):\n    os.environ['PROBE_LATE'] = 'x' * 77\n"
    )
    return {
        **os.environ,
        "PYTHONPATH": str(site),
        "IMGBENCH_PYPROJECT": str(tmp_path / "pyproject.toml"),
        "PROBE_LOG": str(tmp_path / "probe.log"),
    }


Measure = Callable[..., list[tuple[Case, Outcome]]]
Engine = Callable[..., list[tuple[Case, Outcome]]]


@pytest.fixture
def engine(tiny_dataset: Path) -> Iterator[Engine]:
    """``engine(stage, keep, profile="quick", **settings)``: the profile's cases of ``stage`` that
    ``keep(case)`` accepts, measured by the engine's ``Manager`` in this process on a real worker
    server (no pytest session around it), on ``tiny_dataset``; each call is one session, closed
    (server stopped, builds removed) at the test's end."""
    managers: list[Manager] = []

    def run(
        stage: str, keep: Callable[[Case], bool], profile: str = "quick", **overrides: Any
    ) -> list[tuple[Case, Outcome]]:
        choice = ProfileChoice(profile)
        settings = resolve(choice.resolve(), overrides)
        cases = [c for c in session_cases(stage, choice, settings) if keep(c)]
        assert cases, f"no {stage} case of {profile} selected"
        manager = Manager(settings, planner(choice), str(tiny_dataset))
        managers.append(manager)
        return [(case, manager.measure(case)) for case in cases]

    yield run
    for manager in managers:
        manager.close()


@pytest.fixture
def measure(
    engine: Engine, probe_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> Iterator[Measure]:
    """``measure(libraries, codecs, profile="probe", **settings)``: the probe profile's matching
    reader cases through ``engine``, with the probe registered here and in the worker server."""
    monkeypatch.syspath_prepend(probe_env["PYTHONPATH"])  # the probe's entry points, here
    monkeypatch.delitem(sys.modules, "probe_imgbench", raising=False)  # this test's copy
    # and in the worker server, which starts with the environment the session started with
    keys = ("PYTHONPATH", "IMGBENCH_PYPROJECT", "PROBE_LOG")
    for key in keys:
        monkeypatch.setenv(key, probe_env[key])
    launch = {**server.LAUNCH_ENVIRON, **{key: probe_env[key] for key in keys}}
    monkeypatch.setattr(server, "LAUNCH_ENVIRON", launch)

    def run(
        libraries: tuple[str, ...],
        codecs: tuple[str, ...],
        profile: str = "probe",
        **overrides: Any,
    ) -> list[tuple[Case, Outcome]]:
        def keep(case: Case) -> bool:
            return case.library in libraries and case.params.get("codec") in codecs

        return engine("read", keep, profile, **overrides)

    yield run
    sys.modules.pop("probe_imgbench", None)


def seen_by_probe(tmp_path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (tmp_path / "probe.log").read_text().splitlines()]
