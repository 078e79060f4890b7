"""Bench sessions that several test modules read, each run once per test session.

The quick profile's whole matrix (every stage, as `pytest benches/` runs it) took 30-45 s in
each of five module fixtures; the stage, dashboard and answer tests now read one run. It is
file-locked in the folder pytest-xdist's workers share: the first worker runs it, the others wait
and read what it left (its rows and an ``outcome.json``), so a failed run fails every reader
with the same output.
"""

from __future__ import annotations

import json
import os
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
    """`pytest benches/ --imgbench-profile=quick` on sixteen real photos, once under ``root``."""
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
