"""Time per pipeline stage, per image: read, decode and augment timed around each sample,
collate around each batch, all inside the pipeline (in the worker that did the work).

Stage times are CPU-side work per image wherever it ran; with W workers the loader's wall time
per image is ideally their sum / W. ``parallel_efficiency`` compares the two, so the part that
is neither (moving batches between processes, the main thread's own work, waiting) shows up.
Where the collate one-hot encodes label heads (crop-ocr), that part of it is its own figure:
``onehot_ms_per_batch``, the median over the timed batches.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from imgbench.loaders.pipeline import STAGES


class StageTimes:
    def __init__(self) -> None:
        self.sums = np.zeros(len(STAGES), dtype=float)
        self.collate_s = 0.0
        self.images = 0
        self.batches = 0
        self.onehot_s: list[float] = []  # per batch, where the collate one-hot encodes heads

    def add(self, stage_s: Any, collate_s: float | None) -> None:
        if stage_s is None:  # a loader that cannot time its parts (e.g. a tf.data graph)
            return
        array = stage_s.numpy() if hasattr(stage_s, "numpy") else np.asarray(stage_s)
        self.sums += array.sum(axis=0)
        self.images += array.shape[0]
        self.collate_s += float(collate_s or 0.0)
        self.batches += 1
        onehot = getattr(collate_s, "onehot_s", None)  # imgbench.loaders.pipeline.CollateSeconds
        if onehot is not None:
            self.onehot_s.append(float(onehot))

    def per_image(self) -> dict[str, float]:
        if not self.images:
            return {}
        out = {
            name: float(total / self.images) for name, total in zip(STAGES, self.sums, strict=True)
        }
        out["collate"] = self.collate_s / self.images
        return out


def stage_extra(times: StageTimes, wall_s: float, parallel: int) -> dict[str, Any]:
    """``stage_times_s``, the bottleneck stage, and how much of the parallel capacity was used."""
    per_image = times.per_image()
    if not per_image or not times.images:
        return {}
    work = sum(per_image.values())
    wall_per_image = wall_s / times.images
    onehot: dict[str, Any] = {}
    if times.onehot_s:  # crop-ocr: the heads' one-hot inside the collate, per batch
        onehot = {
            "onehot_ms_per_batch": 1e3 * float(np.median(times.onehot_s)),
            "onehot_ms_per_batch_mean": 1e3 * float(np.mean(times.onehot_s)),
            "onehot_batches": len(times.onehot_s),
        }
    return {
        **onehot,
        "stage_times_s": per_image,
        "bottleneck_stage": max(per_image, key=per_image.__getitem__),
        "pipeline_s_per_image": work,
        "wall_s_per_image": wall_per_image,
        "parallel_efficiency": work / (wall_per_image * max(1, parallel))
        if wall_per_image
        else None,
    }
