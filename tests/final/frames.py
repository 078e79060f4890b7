"""Loader rows built by hand for the final's and the answer's tests (no session): one machine, one
dataset, 224 x 224 output, ten timed rounds of a few percent of spread around the given images/s."""

from __future__ import annotations

import json
import statistics
from datetime import UTC, datetime
from typing import Any

import pandas as pd

from imgbench.results.schema import empty_row

IMAGES = 64
# each timed round's time over the median round's: a quiet host's few percent of spread
ROUNDS = (0.97, 0.98, 0.99, 0.995, 1.0, 1.0, 1.005, 1.01, 1.02, 1.03)
RECIPE = "train-classification"


def loader_row(
    name: str,
    library: str,
    images_per_s: float,
    *,
    system: str | None,
    memory_mb: float = 600.0,
    workers: int = 2,
    processes: int = 1,
    environment: str = "main",
    fmt: str = "files",
    decoder: str = "opencv/imdecode-rgb",
    augment: str = "albumentations/numpy",
    configured_as: str | None = None,
) -> dict[str, Any]:
    """One ok loader row of the classification recipe; ``system`` None: the column left null."""
    samples = [IMAGES / images_per_s * f for f in ROUNDS]
    params = {
        "workers": workers,
        "batch_size": 32,
        "format": fmt,
        "decoder": decoder,
        "pipeline": f"{augment}:{RECIPE}",
    }
    extra = {
        "peak_pss_bytes": memory_mb * 1e6,
        "worker_pids": list(range(1000, 1000 + processes - 1)),
    }
    row = empty_row()
    row.update(
        run_id="run-systems",
        run_name="systems",
        created_utc=datetime(2026, 11, 28, 10, 0, tzinfo=UTC),
        status="ok",
        stage="loader",
        library=library,
        variant=f"{fmt}-{name}",
        system=system,
        configured_as=configured_as,
        environment=environment,
        machine_id="machine-systems",
        hostname="systems-box",
        cpu_cores_logical=2,
        dataset_name="synthetic",
        dataset_fingerprint="fp-systems",
        dataset_codec="jpeg",
        codec="jpeg",
        mode="disk",
        workers=workers,
        batch_size=32,
        samples_s=samples,
        images_per_round=IMAGES,
        megapixels_per_round=IMAGES * 224 * 224 / 1e6,
        images_per_s_median=IMAGES / statistics.median(samples),
        params_json=json.dumps(params, sort_keys=True),
        extra_json=json.dumps(extra),
        case_id=f"loader/{library}/{name}",
    )
    return row


def common_default(workers: int, images_per_s: float, *, system: str | None) -> dict[str, Any]:
    """Pillow + image folder + torchvision + DataLoader, nothing tuned (the speed-ups' base)."""
    return loader_row(
        f"pillow-torchvision-{workers}w",
        "torch-dataloader",
        images_per_s,
        system=system,
        memory_mb=450.0 + 60 * workers,
        workers=workers,
        processes=1 + workers,
        decoder="pillow/rgb",
        augment="torchvision/tensor",
    )


def frame_of(rows: list[dict[str, Any]], system_column: bool = True) -> pd.DataFrame:
    """The rows as one frame; ``system_column`` False: results written before the column."""
    frame = pd.DataFrame(rows)
    return frame if system_column else frame.drop(columns=["system"], errors="ignore")
