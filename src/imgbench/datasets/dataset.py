"""A dataset as the harness sees it: a name and a manifest, from a folder or a recipe."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from .manifest import DatasetError, Manifest
from .scan import scan

DEFAULT_RECIPE = "synthetic-small"


@dataclass(frozen=True)
class Dataset:
    name: str
    manifest: Manifest

    @property
    def root(self) -> Path:
        return self.manifest.root

    @property
    def fingerprint(self) -> str:
        return self.manifest.fingerprint

    @property
    def n_images(self) -> int:
        return len(self.manifest.entries)

    @property
    def mean_megapixels(self) -> float:
        entries = self.manifest.entries
        return sum(e.width * e.height for e in entries) / 1e6 / len(entries) if entries else 0.0

    @property
    def mean_bytes(self) -> float:
        """Mean encoded bytes per image (a row's sample is compared with it)."""
        entries = self.manifest.entries
        return sum(e.bytes for e in entries) / len(entries) if entries else 0.0

    @property
    def codec(self) -> str:
        """The dominant codec (at least 90% of the images), or ``mixed``."""
        counts = Counter(e.codec for e in self.manifest.entries)
        if not counts:
            return "none"
        codec, n = counts.most_common(1)[0]
        return codec if n >= 0.9 * self.n_images else "mixed"

    def paths(self) -> list[Path]:
        return [self.root / e.path for e in self.manifest.entries]


def load_dataset(
    spec: str | Path | None = None, *, cache_dir: Path | None = None, progress: bool = True
) -> Dataset:
    """A folder path (scanned) or a recipe name (built on demand, then scanned)."""
    from imgbench.paths import looks_like_path

    from . import recipes

    spec = DEFAULT_RECIPE if spec is None else spec
    text = str(spec)
    if isinstance(spec, Path) or looks_like_path(text):
        path = Path(text).expanduser()
        if not path.exists():
            raise DatasetError(f"dataset path does not exist: {text}")
        return Dataset(path.resolve().name, scan(path, progress=progress))
    if text not in recipes.names():
        known = ", ".join(recipes.names()) or "none"
        raise DatasetError(f"unknown dataset {text!r}: not a folder, and not a recipe ({known})")
    root = recipes.materialize(text, cache_dir, progress=progress)
    return Dataset(text, scan(root, progress=progress))
