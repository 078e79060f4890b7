"""What a case's ``prepare`` may use: the dataset, the settings, the stage plans, and inputs
built once per session.

Everything a stage shares between its cases (encoded bytes, decoded arrays, reference decodes,
built formats) lives here, keyed by what it depends on, and not in module globals: a session's
cache ends with its context, and :meth:`CaseContext.close` removes what it built on disk.
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import itertools
import os
import pickle
import shutil
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from imgbench.atomic import atomic_file
from imgbench.measure.settings import Settings
from imgbench.plan import StagePlan

_discarded = itertools.count()
DISCARDED = ".discarded"  # inside the scratch folder: what cases set aside, removed at the end

if TYPE_CHECKING:
    from imgbench.datasets import Dataset, ImageEntry
    from imgbench.datasets.sample_pool import Sample

T = TypeVar("T")
P = TypeVar("P", bound=StagePlan)


@dataclass
class CaseContext:
    dataset: Dataset
    settings: Settings
    plans: Mapping[str, StagePlan] = field(default_factory=dict)  # stage name -> its plan
    # handles of the session services the current case needs (imgbench.measure.services)
    services: dict[str, Any] = field(default_factory=dict)
    # the samples the current case drew (identity -> sample), for its row (run_case clears it)
    drawn: dict[str, Sample] = field(default_factory=dict, repr=False)
    _shared: dict[Hashable, Any] = field(default_factory=dict, repr=False)
    _scratch: Path | None = field(default=None, repr=False)

    @property
    def max_images(self) -> int:
        return self.settings.max_images

    @property
    def measure(self) -> str:
        """ "instructions": the case is counted under callgrind, where wall-time budgets (cutting
        inputs to fit a time) would make the counted work depend on the machine."""
        return self.settings.measure

    def plan(self, kind: type[P]) -> P:
        """The session's plan for a stage; the stage's defaults when it has none."""
        found = self.plans.get(kind.stage)
        return found if isinstance(found, kind) else kind()

    def sample(self, codec: str | None = None, limit: int | None = None) -> Sample:
        """The seeded sample of ``limit`` images (``max_images``; of one codec if given) that
        represents the dataset (:mod:`imgbench.datasets.sample_pool`), the same in every
        process of the session; the case's row records it."""
        from imgbench.datasets.sample_pool import draw

        n = self.max_images if limit is None else limit
        settings = self.settings
        found = self.shared(
            ("sample", codec, n, settings.sample_seed, settings.sample_max_images),
            lambda: draw(
                self.dataset.manifest.entries,
                n,
                seed=settings.sample_seed,
                cap=settings.sample_max_images,
                codec=codec,
            ),
        )
        self.drawn.setdefault(found.identity, found)
        return found

    def entries(self, codec: str | None = None, limit: int | None = None) -> list[ImageEntry]:
        """The images of :meth:`sample`, in its order (every prefix spreads over the sizes)."""
        return list(self.sample(codec, limit).entries)

    def sample_columns(self) -> dict[str, Any]:
        """The row columns of what the current case drew: its sample (the union, when it drew
        several) and the means of the images it was drawn from."""
        drawn = list(self.drawn.values())
        if not drawn:
            return {}
        images = list({e.path: e for s in drawn for e in s.entries}.values())
        codecs = {s.codec for s in drawn}
        population = [
            e
            for e in self.dataset.manifest.entries
            if None in codecs or e.codec in codecs  # of the case's codecs, when it asked one
        ]
        only = drawn[0] if len(drawn) == 1 else None
        return {
            "sample_id": only.identity if only else _joined(s.identity for s in drawn),
            "sample_images": len(images),
            "sample_mean_megapixels": _mean([e.megapixels for e in images]),
            "sample_mean_bytes": _mean([float(e.bytes) for e in images]),
            "sample_population_mean_megapixels": (
                only.population_mean_megapixels
                if only
                else _mean([e.megapixels for e in population])
            ),
            "sample_population_mean_bytes": (
                only.population_mean_bytes if only else _mean([float(e.bytes) for e in population])
            ),
        }

    def sample_notes(self) -> list[str]:
        """Why a sample the current case drew does not represent its images (the cap missed)."""
        return [note for s in self.drawn.values() if (note := s.note()) is not None]

    def service(self, name: str) -> Any:
        """The handle of a session service the case declared (``Case.services``)."""
        if name not in self.services:
            raise RuntimeError(f"the case did not declare the {name!r} service it uses")
        return self.services[name]

    def path(self, entry: ImageEntry) -> Path:
        return Path(self.dataset.manifest.root) / entry.path

    def shared(self, key: Hashable, build: Callable[[], T]) -> T:
        """``build()`` once per session for ``key``; every later case with that key gets it."""
        if key not in self._shared:
            self._shared[key] = build()
        value: T = self._shared[key]
        return value

    def persisted(self, name: str, build: Callable[[], T]) -> T:
        """Like :meth:`shared`, and also kept in the scratch folder (pickled), so the worker
        processes of one session build it once between them."""

        def load_or_build() -> T:
            path = self.scratch_dir() / "shared" / f"{name}.pickle"
            if path.is_file():
                with path.open("rb") as handle:
                    stored: T = pickle.load(handle)
                return stored
            value = build()
            with atomic_file(path) as handle:
                pickle.dump(value, handle, protocol=pickle.HIGHEST_PROTOCOL)
            return value

        return self.shared(("persisted", name), load_or_build)

    def has(self, key: Hashable) -> bool:
        return key in self._shared

    def forget(self, key: Hashable) -> None:
        """Drop a shared value (e.g. a built folder that has gone), so the next use rebuilds it."""
        self._shared.pop(key, None)

    def encoded(self, codec: str, limit: int | None = None) -> list[tuple[ImageEntry, bytes]]:
        """Encoded file bytes of the sample of ``codec``, read once and shared by cases."""
        sample = self.sample(codec, limit)
        return self.shared(
            ("encoded", sample.identity),
            lambda: [(e, self.path(e).read_bytes()) for e in sample.entries],
        )

    def has_scratch(self) -> bool:
        """Whether this session made its scratch folder (built a store) in this process."""
        return self._scratch is not None and self._scratch.is_dir()

    def scratch_dir(self) -> Path:
        """This session's folder for built inputs, on the dataset's disk (never tmpfs)."""
        if self._scratch is None or not self._scratch.is_dir():
            from imgbench.measure.scratch import make_scratch

            self._scratch = make_scratch(Path(self.dataset.manifest.root))
            # a session that ends without close() (an error in pytest itself) still cleans up
            atexit.register(shutil.rmtree, self._scratch, ignore_errors=True)
        return self._scratch

    def discard(self, path: Path) -> None:
        """Set ``path`` aside in the scratch folder, removed with it when the session ends.

        Deleting files during a session slows every file created after it on some disks: ext4
        without a journal (this project's VM) makes each new file skip, one by one, the inodes
        freed in the last 60-360 s (``recently_deleted()``), measured at 0.2-0.6 ms of CPU per
        new file against 0.02 ms (docs/measuring.md). A rename frees no inode.

        On an emulated disk (``Settings.disk_profile``; the scratch folder is on it) it is
        deleted at once: its fresh ext4 has a journal, where the kernel does not skip recently
        deleted inodes, and it is sized for the session's stores, not every round's output (set
        aside, the `disk` profile's write rounds filled its 1 GiB, docs/disks.md).
        """
        if not path.exists():
            return
        if self.settings.disk_profile != "none":
            shutil.rmtree(path, ignore_errors=True)
            return
        trash = self.scratch_dir() / DISCARDED
        trash.mkdir(exist_ok=True)
        try:
            path.rename(trash / f"{os.getpid()}-{next(_discarded)}")
        except OSError:  # another disk (or a name in use): removed now, as before
            shutil.rmtree(path, ignore_errors=True)

    def close(self) -> None:
        """End the session's caches and remove its scratch folder."""
        self._shared.clear()
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None

    @functools.cached_property
    def codecs(self) -> list[str]:
        """Codecs present in the dataset, most frequent first."""
        counts: dict[str, int] = {}
        for entry in self.dataset.manifest.entries:
            counts[entry.codec] = counts.get(entry.codec, 0) + 1
        return sorted(counts, key=lambda c: (-counts[c], c))


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def _joined(identities: Iterable[str]) -> str:
    """One name for several samples a case drew: 12 hex digits over theirs."""
    return hashlib.sha256("+".join(identities).encode()).hexdigest()[:12]
