"""How much of the loader matrix a profile runs (see imgbench.plan)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import ClassVar, Literal

from imgbench.library import Selection
from imgbench.plan import StagePlan


@dataclass(frozen=True, kw_only=True)
class LoaderPlan(StagePlan):
    """Loaders x workers x pipelines, the DataLoader's knobs, AU and the memory experiment.

    Pipelines are named as in ``imgbench.loaders.cases.NAMED_PIPELINES``.
    """

    stage: ClassVar[str] = "loader"
    libraries: Selection = "default"
    batch_size: int = 32
    batches_per_round: int = 4  # at least; loaders with workers get two batches per worker
    worker_sweep: Literal["auto"] | tuple[int, ...] = "auto"  # auto: 0, 1, 2, ... 2 x cores
    sweep_pipelines: tuple[str, ...] = ("default", "uint8")  # each swept over worker_sweep
    thread_sweep: tuple[int, ...] = (2, 4)  # thread-pool loaders
    extra_pipelines: tuple[str, ...] = ("torchvision", "decode-only", "lmdb", "pillow")
    # task pipelines (segmentation, crop-ocr: NAMED_PIPELINES) through the reference loader, each
    # over task_workers ("auto": 0, 1, ... cores); those of task_pipelines_at_cores at one
    # worker per core only; () none
    task_pipelines: tuple[str, ...] = ()
    task_workers: Literal["auto"] | tuple[int, ...] = "auto"
    task_pipelines_at_cores: tuple[str, ...] = ()
    # the baseline every answer is compared with, at 0 workers and at as many as cores
    baseline_pipeline: str | None = "common-default"
    start_methods: tuple[str, ...] = ("fork", "spawn", "forkserver")
    knobs: bool = True  # persistent_workers off, prefetch_factor 4, pin_memory
    au_accelerators: tuple[int, ...] = (100, 200)  # emulated accelerator speeds, images/s
    # every other loader's AU rows: at the first speed, at this many workers or threads (or the
    # most it runs), one row per method (imgbench.loaders.cases.au_cases)
    au_workers: int = 2
    # crop-aware decodes (imgbench.loaders.crop_decode: the decoder decodes only the crop's
    # window, or at a reduced scale) and their decoders' full-decode twins, through the reference
    # loader at one worker per core
    crop_pipelines: tuple[str, ...] = ()
    # each system also as its own authors' example builds it (imgbench.loaders.documented),
    # where its registry entry names such rows
    as_documented: bool = True
    # the in-RAM ceilings through the reference loader at one worker per core: the pool's
    # encoded bytes ("ram-bytes") and decoded pixels ("ram-decoded") in RAM before the first
    # batch (imgbench.loaders.in_ram); () none
    ceiling_pipelines: tuple[str, ...] = ()
    # training ranks sharing the cores (imgbench.loaders.ranks): for each R here, R loaders of
    # the default pipeline at once, each over its DistributedSampler shard, at cores / R and at
    # cores workers per rank; () none (one rank is every other row)
    ranks: tuple[int, ...] = ()
    # the reference DataLoader with in_order=False (torch >= 2.6) at these worker counts
    in_order_workers: tuple[int, ...] = (2,)
    # local loader rounds read cold on the real disk too (the disk sessions' real-disk pass,
    # docs/disks.md); on an emulated disk they always do (imgbench.loaders.cold)
    cold_rounds: bool = False
    cow_workers: tuple[int, ...] = (0, 2, 4)  # the copy-on-access memory experiment
    cow_entries: int = 1_000_000
    # the index kinds it compares (imgbench.loaders.cow.INDEX_KINDS): pandas is seed 001's case,
    # streamed the MPDataset way (a text file each worker reads its shard of)
    cow_kinds: tuple[str, ...] = ("list", "numpy", "pyarrow", "pandas", "streamed")
    # pipelines whose store is in the session's S3 bucket (storage "s3"), each swept over
    # s3_workers with the first emulated accelerator speed (AU: how many workers hide the
    # network), once per network shape (imgbench.objectstore.shaping names; rtt0ms-unlimited
    # is the server's own address, the others a shaped path the session sets up once)
    s3_pipelines: tuple[str, ...] = ("s3-tar",)
    s3_workers: Literal["auto"] | tuple[int, ...] = "auto"  # auto: the sweep's workers()
    s3_network_shapes: tuple[str, ...] = ("rtt0ms-unlimited",)
    # decoders inside the loader (imgbench.loaders.supply): every full-size JPEG decoder of the
    # readers registry ("all"), or those named ("library" or "library/variant"), each as the
    # default pipeline with that decoder through the reference loader at supply_workers; () none
    supply_decoders: Literal["all"] | tuple[str, ...] = ()
    supply_workers: Literal["auto"] | tuple[int, ...] = "auto"  # auto: 0, 1, ... cores
    # the accelerator half (imgbench.loaders.gpu, library "gpu"): skipped rows where gpu_device is
    # CUDA and there is none. Copies, nvJPEG, GPU augmentation, the step on a cached batch,
    # and each of gpu_feeds (imgbench.loaders.gpu.cases.FEEDS; () none) at gpu_workers DataLoader
    # workers
    gpu_device: str = "cuda"
    gpu_batch_size: int = 256
    gpu_model: str = "resnet50"  # a torchvision.models builder, random weights
    gpu_workers: Literal["auto"] | tuple[int, ...] = "auto"  # auto: one per core
    gpu_batches_per_round: int = 4
    gpu_feeds: tuple[str, ...] = (
        "float32-pinned",
        "float32-pageable",
        "uint8-pinned",
        "uint8-pageable",
        "uint8-prefetcher",
        "uint8-torchdata-nodes",
        "cpu-decode-gpu-augment",
        "nvjpeg-gpu-augment",
        "nvimgcodec-gpu-augment",
    )

    def baseline_workers(self) -> tuple[int, ...]:
        """0 workers and one per core: the common default as it is usually run."""
        return (0, os.cpu_count() or 2)

    def task_worker_counts(self) -> tuple[int, ...]:
        """The task sweep's worker counts: 0 to one per core unless the plan names them."""
        if self.task_workers != "auto":
            return self.task_workers
        return tuple(range((os.cpu_count() or 2) + 1))

    def s3_worker_counts(self) -> tuple[int, ...]:
        """The worker counts of the S3 sweep."""
        return self.workers() if self.s3_workers == "auto" else self.s3_workers

    def supply_worker_counts(self) -> tuple[int, ...]:
        """The worker counts of the decoder supply: 0 to one per core."""
        if self.supply_workers != "auto":
            return self.supply_workers
        return tuple(range((os.cpu_count() or 2) + 1))

    def gpu_worker_counts(self) -> tuple[int, ...]:
        """The DataLoader workers feeding the device: one per core unless the plan says."""
        return (os.cpu_count() or 2,) if self.gpu_workers == "auto" else self.gpu_workers

    def workers(self) -> tuple[int, ...]:
        """The worker counts of the sweep."""
        if self.worker_sweep != "auto":
            return self.worker_sweep
        cores = os.cpu_count() or 2
        return tuple(sorted({0, 1, 2, cores + 1, *range(4, 2 * cores + 1, 2), 2 * cores}))
