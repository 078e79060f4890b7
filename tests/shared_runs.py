"""Bench sessions that several test modules read, each run once per test session.

The quick profile's whole matrix (every stage, as `pytest benches/` runs it) took 30-45 s in
each of five module fixtures; the stage, dashboard and answer tests now read one run. The reader
bench's pair of simultaneous sessions is read by the A/A test (tests/compare/test_aa_real_runs.py)
and the pytest-benchmark outputs' tests (tests/measure/test_readers_bench_e2e.py), which started a
third session of their own. Each is file-locked in the folder pytest-xdist's workers share: the
first worker runs it, the others wait and read what it left (its rows and an ``outcome.json``),
so a failed run fails every reader with the same output.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from filelock import FileLock
from PIL import Image

REPO = Path(__file__).resolve().parents[1]
BENCHES = REPO / "benches"
QUICK_ROUNDS = 3  # the loader rows' answer reads medians of several rounds
QUICK_DESELECT = "not rotate and not color_jitter"  # no reader asserts these augment rows
PHOTOS = (
    "astronaut",
    "chelsea",
    "coffee",
    "rocket",
    "camera",
    "hubble_deep_field",
    "retina",
    "brick",
)


def write_photos(root: Path) -> Path:
    """Sixteen JPEGs of real photos (skimage.data, offline; q90, 320x240 and 240x320) in two
    class folders."""
    import skimage.data

    images = []
    for name in PHOTOS:
        pixels = np.asarray(getattr(skimage.data, name)())
        if pixels.ndim == 2:
            pixels = np.stack([pixels] * 3, axis=-1)
        images.append(Image.fromarray(pixels[..., :3].astype(np.uint8)))
    for i in range(16):
        image = images[i % len(images)].resize((320, 240) if i % 2 else (240, 320))
        path = root / f"class_{i % 2}" / f"photo_{i:02d}.jpg"
        path.parent.mkdir(parents=True, exist_ok=True)
        image.save(path, quality=90)
    return root


@dataclass(frozen=True)
class SessionRun:
    """What a bench session left: its results folder, exit code, output and leftovers."""

    dataset: Path
    results: Path
    returncode: int
    output: str  # the last lines of stdout and stderr, for assertion messages
    scratch_left: list[str]  # what the formats' build folder still held after the session

    def frame(self, stage: str | None = None) -> pd.DataFrame:
        (parquet,) = self.results.glob("*.parquet")
        frame = pd.read_parquet(parquet)
        if stage is not None:
            frame = frame[frame["stage"] == stage].reset_index(drop=True)
        return frame


def shared_root(config: pytest.Config, factory: pytest.TempPathFactory) -> Path:
    """The base temp folder every pytest-xdist worker of this test session shares."""
    base = factory.getbasetemp()
    return base.parent if hasattr(config, "workerinput") else base


def quick_run(root: Path) -> SessionRun:
    """`pytest benches/ --imgbench-profile=quick` on sixteen real photos, once under ``root``
    (``QUICK_DESELECT`` left out)."""
    from tests.conftest import run_pytest

    folder = root / "shared-quick-run"
    outcome = folder / "outcome.json"
    with FileLock(str(root / "shared-quick-run.lock")):
        if not outcome.exists():
            folder.mkdir(exist_ok=True)
            dataset = write_photos(folder / "photos")
            scratch = folder / "scratch"  # formats build their stores here: empty again after
            scratch.mkdir(exist_ok=True)
            env = {
                **os.environ,
                "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
                "IMGBENCH_FORMATS_DIR": str(scratch),
            }
            proc = run_pytest(
                [
                    str(BENCHES),
                    f"--dataset={dataset}",
                    "--imgbench-profile=quick",
                    f"--imgbench-rounds={QUICK_ROUNDS}",
                    f"--imgbench-results={folder / 'results'}",
                    # tfrecord unimportable: the quick profile needs none of the optional formats
                    "-p",
                    "tests.formats.block_imports",
                    # what the readers assert: augment rows of hflip, resize, normalize and the
                    # pipeline (tests/augment/test_bench_e2e.py); rotate and color_jitter were 6
                    # of the 18 augment cases, each transform's agreement computed once more
                    # (every transform's agreement: tests/augment/test_agreement.py)
                    "-k",
                    QUICK_DESELECT,
                ],
                cwd=folder,
                timeout=900,
                env=env,
            )
            record = {
                "dataset": str(dataset),
                "results": str(folder / "results"),
                "returncode": proc.returncode,
                "output": proc.stdout[-4000:] + proc.stderr[-3000:],
                "scratch_left": sorted(p.name for p in scratch.iterdir()),
            }
            outcome.write_text(json.dumps(record))
    record = json.loads(outcome.read_text())
    return SessionRun(
        dataset=Path(record["dataset"]),
        results=Path(record["results"]),
        returncode=record["returncode"],
        output=record["output"],
        scratch_left=record["scratch_left"],
    )


# pillow and OpenCV on JPEG and PNG, WebP skipped (no such image), BMP and TIFF deselected
READER_PAIR_K = "(jpeg or png or webp) and (pillow or opencv)"


@dataclass(frozen=True)
class ReaderRun:
    """One session of the reader pair: its folder, rows, pytest-benchmark JSON and storage."""

    dir: Path
    results: Path
    json: Path
    storage: Path
    returncode: int
    output: str

    @property
    def parquet(self) -> Path:
        (path,) = self.results.glob("*.parquet")
        return path


def reader_pair(root: Path, dataset: Path) -> dict[str, ReaderRun]:
    """Two sessions of `benches/bench_readers.py` (quick, ``READER_PAIR_K``) started at the same
    time on ``dataset``, with pytest-benchmark's save, storage and JSON flags: two runs of the
    same code that met the same load (an A/A pair), each one a user's run with every output."""
    folder = root / "shared-reader-pair"
    outcome = folder / "outcome.json"
    with FileLock(str(root / "shared-reader-pair.lock")):
        if not outcome.exists():
            folder.mkdir(exist_ok=True)
            procs = {}
            for name in ("a", "b"):
                out = folder / name
                out.mkdir(exist_ok=True)
                args = [
                    sys.executable,
                    "-m",
                    "pytest",
                    "-p",
                    "no:cacheprovider",
                    "-q",
                    str(BENCHES / "bench_readers.py"),
                    f"--dataset={dataset}",
                    "--imgbench-profile=quick",
                    f"--imgbench-results={out / 'results'}",
                    "--benchmark-save=ci",
                    f"--benchmark-storage={out / 'storage'}",
                    "--benchmark-save-data",
                    f"--benchmark-json={out / 'run.json'}",
                    "--imgbench-set=host_budget_s=0.25",
                    "--imgbench-set=max_images=8",
                    "-k",
                    READER_PAIR_K,
                ]
                procs[name] = subprocess.Popen(
                    args, cwd=out, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
                )
            record = {}
            for name, proc in procs.items():
                output, _ = proc.communicate(timeout=300)
                record[name] = {"returncode": proc.returncode, "output": output[-6000:]}
            outcome.write_text(json.dumps(record))
    record = json.loads(outcome.read_text())
    return {
        name: ReaderRun(
            dir=folder / name,
            results=folder / name / "results",
            json=folder / name / "run.json",
            storage=folder / name / "storage",
            returncode=record[name]["returncode"],
            output=record[name]["output"],
        )
        for name in ("a", "b")
    }
