"""What a case's ``prepare`` may use: the dataset, the profile, and inputs loaded once per session."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from imgbench.profiles import Profile

if TYPE_CHECKING:
    from imgbench.datasets import Dataset, ImageEntry


@dataclass
class CaseContext:
    dataset: Dataset
    profile: Profile
    max_images: int
    _bytes_cache: dict[tuple[str, int], list[tuple[ImageEntry, bytes]]] = field(
        default_factory=dict, repr=False
    )

    def entries(self, codec: str | None = None, limit: int | None = None) -> list[ImageEntry]:
        """The first ``limit`` usable entries (of one codec if given), in manifest order."""
        limit = self.max_images if limit is None else limit
        chosen = [e for e in self.dataset.manifest.entries if codec is None or e.codec == codec]
        return chosen[:limit]

    def path(self, entry: ImageEntry) -> Path:
        return self.dataset.manifest.root / entry.path

    def encoded(self, codec: str, limit: int | None = None) -> list[tuple[ImageEntry, bytes]]:
        """Encoded file bytes of the first images of ``codec``, read once and shared by cases."""
        limit = self.max_images if limit is None else limit
        key = (codec, limit)
        if key not in self._bytes_cache:
            self._bytes_cache[key] = [
                (entry, self.path(entry).read_bytes()) for entry in self.entries(codec, limit)
            ]
        return self._bytes_cache[key]

    @functools.cached_property
    def codecs(self) -> list[str]:
        """Codecs present in the dataset, most frequent first."""
        counts: dict[str, int] = {}
        for entry in self.dataset.manifest.entries:
            counts[entry.codec] = counts.get(entry.codec, 0) + 1
        return sorted(counts, key=lambda c: (-counts[c], c))
