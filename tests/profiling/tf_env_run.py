"""One interpreter of the TensorFlow environment, once per test process, for what the Keras and
tf.data profile tests and tests/envs/test_envs.py's TensorFlow decode check read: a TensorFlow
start costs 4-5 s of CPU here, and each of them paid one (the profiles once four, each behind a
main-env CLI).

The profiles run as `imgbench profile ARGS` (its typer command, parsed and printed as from a
terminal); `--env tensorflow` naming the env it runs in profiles in place, so the main env's
hand-over to the env's interpreter is test_tf_data.py::test_factory_returning_something_else_is_one_line's.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import write_photo_like
from tests.envs.env_sessions import env_python

REPO = Path(__file__).resolve().parents[2]
PIPELINES = "tests.profiling.pipelines"

# short phases: each configuration takes a few seconds. (1 s of samples: 95-120 here, and the
# shares the tests ask for, decode + augment > 0.5, read 0.93-0.97 with 1.5 s; was 1 / 0.5 / 1.5)
QUICK = ["--seconds", "0.5", "--au-seconds", "0.25", "--sample-seconds", "1"]

SCRIPT = r"""
import json, sys, traceback
from pathlib import Path
jobs, photos = json.loads(sys.argv[1]), Path(sys.argv[2])
found = {"decodes": [], "profiles": {}}
try:  # TensorFlow's two readers, verified on real photos as the bench verifies them
    from imgbench.readers.registry import find_spec, build_reader
    from imgbench.readers.verify import verify_item
    for variant in ("decode-image", "decode-jpeg"):
        spec = find_spec("tensorflow", variant)
        reader = build_reader(spec)
        for path in sorted(photos.iterdir()):
            codec = "jpeg" if path.suffix == ".jpg" else "png"
            if codec not in spec.codecs:
                continue
            data = path.read_bytes()
            for fn, item in ((reader.decode, data), (reader.read, str(path))):
                v = verify_item(fn, item, path=path.name, data=data, key=path.name, codec=codec)
                found["decodes"].append([variant, path.name, v.ok, v.detail, v.mae])
except Exception:
    found["decode_error"] = traceback.format_exc()
from typer.testing import CliRunner
from imgbench.cli import app
for name, args in jobs.items():
    done = CliRunner().invoke(app, ["profile", *args])
    stderr = done.stderr
    if done.exception is not None and not isinstance(done.exception, SystemExit):
        stderr += "".join(traceback.format_exception(done.exception))
    found["profiles"][name] = {
        "returncode": done.exit_code, "stdout": done.stdout, "stderr": stderr
    }
print("RESULT " + json.dumps(found))
"""


def profile_env() -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)]),
        "NO_ALBUMENTATIONS_UPDATE": "1",
        "COLUMNS": "160",
    }


def tf_jobs(photos: Path) -> dict[str, list[str]]:
    """Each profile's arguments (its ``--results`` added by the run)."""
    keras = [f"{PIPELINES}.keras_pydataset:make_dataset", "--kw", f"root={photos}"]
    keras_phases = [*QUICK, "--env", "tensorflow", "--no-readers"]
    tf_data = [f"{PIPELINES}.tf_data:make_dataset", "--kw", f"root={photos}"]
    # no stacks for tf.data; 0.5 s is still about eight memory points a configuration
    tf_phases = ["--seconds", "0.5", "--au-seconds", "0.25", "--env", "tensorflow"]
    return {
        "keras-sweep": [
            *keras,
            *("--kw", "workers=2", "--kw", "multiprocessing=True", "--workers", "0,2"),
            *keras_phases,
            # the pool's workers live one epoch: 1.5 s of stacks sometimes caught none of them
            *("--sample-seconds", "3"),
        ],
        "keras-bad": [*keras, "--kw", "bad=True", "--workers", "0", *keras_phases],
        "tf-data-sweep": [*tf_data, "--kw", "threads=3", "--workers", "1,2", *tf_phases],
        "tf-data-bad": [*tf_data, "--kw", "bad=True", "--workers", "1", *tf_phases],
    }


@dataclass(frozen=True)
class TfRun:
    """The interpreter's exit code and output, what it found, and each profile's results."""

    returncode: int
    output: str
    found: dict[str, Any]
    jobs: dict[str, list[str]]
    results: dict[str, Path]


_RUN: dict[str, TfRun] = {}


def tf_env_run(factory: pytest.TempPathFactory) -> TfRun:
    """The run, started by the first test that asks (skipped where the env is not built, as
    tests/loaders/test_tensorflow_env.py)."""
    if "run" in _RUN:
        return _RUN["run"]
    python = env_python("tensorflow")
    from tests.readers.images import photo_bytes

    root = factory.mktemp("tf-env-run")
    photos = root / "photos"  # 24 JPEGs of 320x240, q90, in two class folders
    for i in range(24):
        write_photo_like(photos / f"class_{i % 2}" / f"photo_{i:02d}.jpg", (320, 240), seed=i)
    decode = root / "decode"
    decode.mkdir()
    for name in ("coffee", "chelsea"):
        (decode / f"{name}.jpg").write_bytes(photo_bytes(name, "jpeg"))
        (decode / f"{name}.png").write_bytes(photo_bytes(name, "png"))
    results = {name: root / name / "results" for name in tf_jobs(photos)}
    jobs = {
        name: [*args, "--results", str(results[name])] for name, args in tf_jobs(photos).items()
    }
    proc = subprocess.run(
        [str(python), "-c", SCRIPT, json.dumps(jobs), str(decode)],
        cwd=REPO,
        env=profile_env(),
        capture_output=True,
        text=True,
        timeout=480,
        check=False,
    )
    lines = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")]
    _RUN["run"] = TfRun(
        returncode=proc.returncode,
        output=proc.stdout[-3000:] + proc.stderr[-3000:],
        found=json.loads(lines[0].removeprefix("RESULT ")) if lines else {},
        jobs=jobs,
        results=results,
    )
    return _RUN["run"]
