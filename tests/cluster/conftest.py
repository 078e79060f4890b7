"""A real local Ray cluster (head + two workers) and a real S3 server for the multi-machine tests.

Both are module-scoped: the cluster takes 10-45 s to start on this 2-core VM (each node's
`ray start` joins after the previous one), the S3 server 5-10 s. Each is stopped by process id
at the end, and the test checks with psutil that none of their processes is left.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from imgbench.objectstore.server import S3Endpoint, S3Server
from tests.cluster.ray_local import LocalRayCluster
from tests.conftest import installed_package

# A reader registered by entry point, as another package would: `fast` variants decode at once,
# `slow` ones sleep 0.4 s per image, so a node can be killed while it measures one.
SLOW_READER = """
import io
import time

import numpy as np
from PIL import Image

from imgbench.readers.base import BytesReader, ReaderSpec


class Fast(BytesReader):
    def decode(self, data):
        with Image.open(io.BytesIO(data)) as image:
            return np.ascontiguousarray(np.asarray(image.convert("RGB")))


class Slow(Fast):
    def decode(self, data):
        time.sleep(0.4)
        return super().decode(data)


READERS = [
    *(ReaderSpec(library="raytoy", variant=f"fast{i}", adapter=__name__ + ":Fast",
                 requires=("PIL",)) for i in range(1, 8)),
    *(ReaderSpec(library="raytoy", variant=f"slow{i}", adapter=__name__ + ":Slow",
                 requires=("PIL",)) for i in range(8, 10)),
]
"""

PROFILE = """
[tool.imgbench.profiles.raytoy]
base = "quick"
description = "the raytoy reader only: 7 fast cases, then 2 slow ones"
rounds = 1
warmup_rounds = 0
max_images = 4
min_round_s = 0.0

[tool.imgbench.profiles.raytoy.read]
libraries = ["raytoy"]
codecs = ["jpeg"]
"""


@pytest.fixture(scope="module")
def toy_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Environment variables for the cluster's nodes and the driver: the raytoy reader on
    PYTHONPATH and its profile."""
    root = tmp_path_factory.mktemp("raytoy")
    site = installed_package(
        root, "raytoy_imgbench", SLOW_READER, "[imgbench.read]\nraytoy = raytoy_imgbench:READERS\n"
    )
    pyproject = root / "pyproject.toml"
    pyproject.write_text(PROFILE)
    return {
        "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]),
        "IMGBENCH_PYPROJECT": str(pyproject),
        "NO_ALBUMENTATIONS_UPDATE": "1",
    }


@pytest.fixture(scope="module")
def ray_cluster(
    tmp_path_factory: pytest.TempPathFactory, toy_env: dict[str, str]
) -> Iterator[LocalRayCluster]:
    pytest.importorskip("ray")
    # a short root: Ray's socket paths under it must stay within AF_UNIX's 107 bytes, which a
    # pytest-xdist worker's basetemp (.../popen-gw1/ray0/ray/session_.../sockets/...) exceeds
    root = Path(tempfile.mkdtemp(prefix="ray-", dir="/tmp"))
    cluster = LocalRayCluster(root, env=toy_env)
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()
        shutil.rmtree(root, ignore_errors=True)
    left = [p for p in cluster.processes() if _running(p)]
    assert left == [], f"Ray processes left: {[(p.pid, p.name()) for p in left]}"


def _running(proc: psutil.Process) -> bool:
    try:
        return proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


@pytest.fixture(scope="module")
def s3(s3_server: S3Server) -> S3Endpoint:
    """The test process's shared server (tests/conftest.py); each test writes its own prefix."""
    return s3_server.endpoint


def aws_env(endpoint: S3Endpoint, **override: str) -> dict[str, str]:
    """The standard AWS variables for ``endpoint`` (what a user exports)."""
    env = {
        "AWS_ENDPOINT_URL": endpoint.url,
        "AWS_ACCESS_KEY_ID": endpoint.access_key,
        "AWS_SECRET_ACCESS_KEY": endpoint.secret_key,
        "AWS_REGION": endpoint.region,
    }
    env.update(override)
    return env


def left_sessions(marker: str) -> list[psutil.Process]:
    """pytest sessions of a share (their command line names its select file) still running."""
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        cmdline = " ".join(proc.info.get("cmdline") or [])
        if marker in cmdline and "--imgbench-select" in cmdline and _running(proc):
            found.append(proc)
    return found


@pytest.fixture
def photo_dir(tiny_dataset: Path) -> Path:
    return tiny_dataset
