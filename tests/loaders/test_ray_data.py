"""Ray Data for real: a local cluster started and shut down inside a pytest session of the bench.

It runs in a child pytest (as `make bench` runs it) because Ray may end the whole process when
one of its threads outlives ``ray.shutdown()``; the child must finish with its row written.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import psutil

from tests.conftest import run_pytest

BENCHES = Path(__file__).resolve().parents[2] / "benches"


def test_ray_data_row_is_steady_state_and_leaves_no_ray_process(
    tmp_path: Path, photo_dir_48: Path
) -> None:
    # Ray Data is in `full` and by name, not in make bench's default selection
    (tmp_path / "pyproject.toml").write_text(
        '[tool.imgbench.profiles.ray]\nbase = "default"\n'
        '[tool.imgbench.profiles.ray.loader]\nlibraries = ["torch-dataloader", "ray-data"]\n'
        "au_accelerators = []\n"  # Ray Data's AU row (every loader has one) is another minute
    )
    proc = run_pytest(
        [
            str(BENCHES / "bench_loaders.py"),
            f"--dataset={photo_dir_48}",
            "--imgbench-profile=ray",
            # every stage's rounds, the loaders' too (the default profile's loader rows time 5):
            # each Ray round lasts at least Ray Data's 3 s floor (after a warm-up and a calibration
            # round of as long), so 2 rounds are 6+ s of batches to set against the steady rate
            "--imgbench-rounds=2",
            f"--imgbench-results={tmp_path / 'results'}",
            "-k",
            "ray-data or (torch-dataloader and t1-0] and files-opencv-albumentations-32)",
        ],
        cwd=tmp_path,
        timeout=400,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (parquet,) = (tmp_path / "results").glob("*.parquet")
    rows = pd.read_parquet(parquet).set_index("library")
    assert set(rows.index) == {"ray-data", "torch-dataloader"}
    assert (rows["status"] == "ok").all(), rows["reason"].tolist()
    ray, single = rows.loc["ray-data"], rows.loc["torch-dataloader"]
    extra = json.loads(ray["extra_json"])
    assert extra["ray_init_s"] > 0 and extra["drained_batches"] >= 4
    # 2 Ray tasks on 2 cores cannot beat one core by much more than 2x; the rounds that timed
    # batches computed ahead read 40x+ (the 20,858 images/s bug). The bounds are that bug's, not a
    # speed target: under CI's parallel tests the one-core row lost its core and read 3.3x.
    assert ray["images_per_s_median"] < 10 * single["images_per_s_median"]
    assert 0.25 < extra["steady_images_per_s"] / ray["images_per_s_median"] < 4
    leftovers = [
        p.name() for p in psutil.process_iter() if p.name().startswith(("ray::", "raylet"))
    ]
    assert leftovers == [] or all("gcs" in n for n in leftovers), leftovers
