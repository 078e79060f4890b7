"""Real photos (skimage.data ships them offline), a harness context to build loaders from, and
the tensorflow environment's one bench session."""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from imgbench.controls import case_context
from imgbench.measure.context import CaseContext
from imgbench.profiles import get_profile
from tests.shared_runs import write_photos


@pytest.fixture(scope="session")
def photo_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Sixteen JPEGs of real photos (q90, 320x240 and 240x320) in two class folders."""
    return write_photos(tmp_path_factory.mktemp("loader-photos"))


def make_context(root: Path, profile: str = "quick", max_images: int = 16) -> CaseContext:
    from imgbench.datasets import load_dataset

    return case_context(load_dataset(str(root)), get_profile(profile), max_images=max_images)


@pytest.fixture
def photo_ctx(photo_dir: Path) -> CaseContext:
    return make_context(photo_dir)


@pytest.fixture(scope="session")
def photo_dir_48(tmp_path_factory: pytest.TempPathFactory, photo_dir: Path) -> Path:
    """The sixteen photos three times over: enough for the default profile's batches of 32."""
    import shutil

    root = tmp_path_factory.mktemp("loader-photos-48")
    for copy in range(3):
        for path in photo_dir.rglob("*.jpg"):
            target = root / path.parent.name / f"{path.stem}-{copy}.jpg"
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
    return root


@dataclass(frozen=True)
class TensorflowSession:
    """What the tensorflow environment's one bench session left: its rows, and the task probe's
    findings (tests/loaders/tf_tasks_probe.py ran in the same interpreter after the cases)."""

    rows: pd.DataFrame
    probe: dict[str, Any]


@pytest.fixture(scope="session")
def tf_session(tmp_path_factory: pytest.TempPathFactory, photo_dir_48: Path) -> TensorflowSession:
    """The default profile's tf.data and Keras rows in the tensorflow env, measured in the
    session's process (correctness: the worker server is the main env's, tests/measure/), then
    the task probe: one TensorFlow start for tests/loaders/test_tensorflow_env.py and
    tests/loaders/test_tf_tasks.py (each had its own, about 10 s of CPU)."""
    from imgbench.paths import repo_root
    from tests.envs.env_sessions import env_python

    root = repo_root()
    assert root is not None
    python = env_python("tensorflow")
    out = tmp_path_factory.mktemp("tf-loaders")
    probe_file = out / "probe.json"
    proc = subprocess.run(
        [
            str(python),
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-p",
            "tests.loaders.tf_tasks_probe",
            str(root / "benches" / "bench_loaders.py"),
            "--imgbench-env=tensorflow",
            "--imgbench-profile=default",
            # the profile's rows, checked, not timed: one round each, none untimed (no warm-up,
            # no calibration rounds: min_round_s=0 leaves the repeats at 1, as they were)
            "--imgbench-rounds=1",
            "--imgbench-set=warmup_rounds=0",
            "--imgbench-set=min_round_s=0",
            "--imgbench-process=in-process",
            f"--dataset={photo_dir_48}",  # the default profile's batches are 32
            f"--imgbench-results={out / 'results'}",
            "-k",
            # every kind of row the default profile runs here, less the task rows whose loader
            # the probe checks on real files already (Keras's segmentation pools, tf.data's
            # segmentation from TFRecord): ~30 s less
            "(tf-data or keras) and not segmentation+threads and not segmentation+processes"
            " and not tfrecord-tensorflow-tensorflow-segmentation",
        ],
        cwd=out,
        env={
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]),
            "IMGBENCH_TEST_TF_PROBE": str(probe_file),
            "IMGBENCH_TEST_TF_PHOTOS": str(photo_dir_48),
        },
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (parquet,) = (out / "results").glob("*.parquet")
    return TensorflowSession(pd.read_parquet(parquet), json.loads(probe_file.read_text()))
