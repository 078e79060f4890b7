"""How much of the augmentation matrix a profile runs (see imgbench.plan)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

from imgbench.library import Selection
from imgbench.plan import StagePlan


@dataclass(frozen=True, kw_only=True)
class AugmentPlan(StagePlan):
    """Libraries x transforms and x pipelines, per image and in batches."""

    stage: ClassVar[str] = "augment"
    libraries: Selection = "default"
    transforms: Literal["all"] | tuple[str, ...] = "all"  # names from the parameter table
    # pipelines by name; "all" = every pipeline of augment/pipelines.py
    pipelines: Literal["all"] | tuple[str, ...] = ("train-classification", "light", "heavy")
    transform_threads_default: bool = False  # also run transforms with library-default threads
    pipeline_threads_default: bool = True  # ... and pipelines (batch cases included)
    batch_sizes: tuple[int, ...] = (32,)
    max_images: int = 16  # cap on images per round
    budget_s: float = 2.0  # a case's timed work (rounds x images) is cut to about this
    # tasks beyond classification (augment/tasks.py): segmentation, crop-ocr (with its one-hot
    # heads of ``ocr_classes`` classes as their own case)
    tasks: tuple[str, ...] = ()
    ocr_classes: int = 21_000
