"""Loader rounds that read cold on an emulated disk (``--disk``), and on the real disk where the
loader plan says ``cold_rounds``: every file the pool reads is evicted from the page cache before
each round, as the reader and format stages' cold cases do,
so the rows show the disk rather than the page cache a warm-up pass filled.

A loader's workers keep reading ahead while the untimed eviction runs, so the pages of the images
they read right then count as resident (34% of a 16-image pool, measured). The dataset's files
are read with plain reads and closed (nothing can pin them), so their residency is recorded, never
a reason to stop. A built store may be mapped by the workers (LMDB), and the kernel never drops
mapped pages: where more than ``MAX_RESIDENT`` of its pages stay cached after ``EVICTIONS``
evictions, the case is skipped with why rather than reporting a warm figure as cold. Within a
round, an image read twice (a pool smaller than the round) is read warm the second time, as on a
real disk.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from imgbench.measure.cache import CacheControl, evict_and_check
from imgbench.measure.context import CaseContext
from imgbench.measure.errors import Skip

MAX_RESIDENT = 0.25  # of a store's pages still cached after EVICTIONS evictions
EVICTIONS = 3  # a store's eviction is retried (a few ms apart) while workers race it
NONE = "none"  # Settings.disk_profile on the real disk


class LoaderColdCache(CacheControl):
    """Cold before every round, checked against :data:`MAX_RESIDENT`; skips where it cannot be."""

    def __init__(self, files: list[Path], *, mappable: bool) -> None:
        super().__init__("cold", files)
        self.mappable = mappable  # a store a reader may map (the dataset's files are never)

    def start(self) -> str | None:
        reason = super().start()
        self.method = (
            "cold: posix_fadvise(DONTNEED) on every file of the pool before "
            f"every round (workers keep reading ahead meanwhile); mincore residency after evict "
            f"{self.worst_resident:.1%}"
        )
        return reason

    def before_round(self) -> None:
        check = evict_and_check(self.files)
        for _ in range(EVICTIONS - 1):
            if not self.mappable or check.resident_after <= MAX_RESIDENT:
                break
            time.sleep(0.01)
            check = evict_and_check(self.files)
        self.worst_resident = max(self.worst_resident, check.resident_after)
        if self.mappable and check.resident_after > MAX_RESIDENT:
            raise Skip(
                f"cold loader rounds impossible here: {check.resident_after:.0%} of the pool's "
                "pages stayed cached after eviction (the workers keep the store mapped)"
            )


def cold_files(source: Any) -> tuple[list[Path], bool] | None:
    """The files a local source reads (the dataset's images, or every file of a built store) and
    whether a reader may map them; None for a source imgbench does not read itself (a loader's
    own format)."""
    from imgbench.loaders.pipeline import FileSource, FormatSource

    if isinstance(source, FileSource):
        return [Path(os.fsdecode(p)) for p in source.paths], False
    if isinstance(source, FormatSource):
        from imgbench.formats.base import format_files

        return format_files(source.path), True
    return None


def cold_cache(ctx: CaseContext, source: Any, own_format: bool) -> LoaderColdCache | None:
    """The cold cache of a loader case on an emulated disk, or on the real disk where the plan
    says ``cold_rounds`` (the disk sessions' real-disk pass); None elsewhere (rounds read warm)
    and for a loader that reads a store it builds itself."""
    from imgbench.loaders.plan import LoaderPlan

    real = ctx.settings.disk_profile == NONE
    if own_format or (real and not ctx.plan(LoaderPlan).cold_rounds):
        return None
    found = cold_files(source)
    if found is None or not found[0]:
        return None
    cache = LoaderColdCache(found[0], mappable=found[1])
    if reason := cache.start():  # before the workers open anything
        raise Skip(reason)
    return cache
