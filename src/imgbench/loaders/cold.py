"""Loader rounds that read cold on an emulated disk (``--disk``): every file the pool reads is
evicted from the page cache before each round, as the reader and format stages' cold cases do,
so the rows show the disk rather than the page cache a warm-up pass filled.

A loader's workers keep reading ahead while the untimed eviction runs, so the pages of the few
images they read right then count as resident; the mincore check therefore accepts up to
``MAX_RESIDENT`` of the pool's pages instead of the cold cases' 2%. More than that means the
pages cannot be dropped (a store the workers keep mapped): the case is skipped with why rather
than reporting a warm figure as cold. Within a round, an image read twice (a pool smaller than
the round) is read warm the second time, as on a real disk.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from imgbench.measure.cache import CacheControl, evict_and_check
from imgbench.measure.context import CaseContext
from imgbench.measure.errors import Skip

MAX_RESIDENT = 0.25  # of the pool's pages still cached after an eviction
NONE = "none"  # Settings.disk_profile on the real disk


class LoaderColdCache(CacheControl):
    """Cold before every round, checked against :data:`MAX_RESIDENT`; skips where it cannot be."""

    def __init__(self, files: list[Path]) -> None:
        super().__init__("cold", files)

    def start(self) -> str | None:
        reason = super().start()
        self.method = (
            "cold on an emulated disk: posix_fadvise(DONTNEED) on every file of the pool before "
            f"every round (workers keep reading ahead meanwhile); mincore residency after evict "
            f"{self.worst_resident:.1%}"
        )
        return reason

    def before_round(self) -> None:
        check = evict_and_check(self.files)
        self.worst_resident = max(self.worst_resident, check.resident_after)
        if check.resident_after > MAX_RESIDENT:
            raise Skip(
                f"cold loader rounds impossible here: {check.resident_after:.0%} of the pool's "
                "pages stayed cached after eviction (the workers keep the store mapped)"
            )


def cold_files(source: Any) -> list[Path] | None:
    """The files a local source reads: the dataset's images, or every file of a built store;
    None for a source imgbench does not read itself (a loader's own format)."""
    from imgbench.loaders.pipeline import FileSource, FormatSource

    if isinstance(source, FileSource):
        return [Path(os.fsdecode(p)) for p in source.paths]
    if isinstance(source, FormatSource):
        from imgbench.formats.base import format_files

        return format_files(source.path)
    return None


def cold_cache(ctx: CaseContext, source: Any, own_format: bool) -> LoaderColdCache | None:
    """The cold cache of a loader case on an emulated disk; None on the real disk (rounds read
    warm, as before) and for a loader that reads a store it builds itself."""
    if ctx.settings.disk_profile == NONE or own_format:
        return None
    files = cold_files(source)
    if not files:
        return None
    cache = LoaderColdCache(files)
    if reason := cache.start():  # before the workers open anything
        raise Skip(reason)
    return cache
