"""pytest plugin for the bench subprocess: ``imgbench.datasets.load_dataset`` until it exists.

The datasets package is being finished in parallel; when it provides ``load_dataset`` this
plugin does nothing. Otherwise it supplies a minimal one built on ``datasets.scan``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import imgbench.datasets as datasets
from imgbench.datasets.manifest import DatasetError, Manifest
from imgbench.datasets.scan import scan


@dataclass
class _Dataset:
    manifest: Manifest

    @property
    def name(self) -> str:
        return self.manifest.root.name

    @property
    def fingerprint(self) -> str:
        return self.manifest.fingerprint

    @property
    def n_images(self) -> int:
        return len(self.manifest.entries)

    @property
    def mean_megapixels(self) -> float:
        return self.manifest.summary()["mean_megapixels"]

    @property
    def codec(self) -> str:
        codecs = self.manifest.summary()["codecs"]
        return next(iter(codecs)) if len(codecs) == 1 else "mixed"


def _load_dataset(spec: str) -> _Dataset:
    return _Dataset(scan(Path(spec)))


if not hasattr(datasets, "load_dataset"):
    datasets.load_dataset = _load_dataset  # type: ignore[attr-defined]
    datasets.DatasetError = DatasetError  # type: ignore[attr-defined]
