"""How much of the reader matrix a profile runs (see imgbench.plan)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from imgbench.library import Selection
from imgbench.plan import StagePlan

CODECS = ("jpeg", "png", "webp", "bmp", "tiff")  # every codec a reader may decode


@dataclass(frozen=True, kw_only=True)
class ReadPlan(StagePlan):
    """Readers x codecs x modes; ``None`` thread tuples mean the profile's ``thread_modes``."""

    stage: ClassVar[str] = "read"
    libraries: Selection = "default"
    codecs: tuple[str, ...] = CODECS
    memory_threads: tuple[int | None, ...] | None = None  # decode from bytes in memory
    disk_threads: tuple[int | None, ...] | None = (1,)  # warm and cold disk; () = no disk modes
    disk_codecs: tuple[str, ...] | None = None  # codecs also read from disk; None = every codec
    reduces: tuple[int, ...] = (4,)  # factors of the reduced and resize variants; () = none
    native: bool = True  # tjbench's native ceiling rows
    # batched readers (a list of images per call, memory mode): images per call, and threads
    # (None = the library's own pool, which is what batching is for)
    batch_sizes: tuple[int, ...] = (32,)
    batch_threads: tuple[int | None, ...] = (1, None)
