"""The images a case times: a seeded sample that represents the dataset, not its first files.

A manifest is sorted by path, and a folder is sorted by class: its first ``max_images`` entries
are one class's first files (on the synthetic ImageNet-like set, 0.548 MP and 102 KB per image
against 0.349 MP and 74 KB over all 512), and a figure measured on them is about that class. So
the pool is drawn across sizes and classes:

- the images (of the asked codec) are ordered by size (the sum of their megapixel and byte ranks)
  and cut into ``n`` strata of equal count; one image is drawn from each, so every part of the
  size range is in the sample in proportion (a self-weighting, stratified sample);
- within a stratum, the draw is among the images of the classes (labels: top folders) furthest
  behind their share of the dataset so far, so classes come in proportion too;
- a draw is kept when its mean megapixels and mean bytes per image are both within
  :data:`TOLERANCE` of the population's. Sizes have a long tail (a 5 MP photo among 0.2 MP ones):
  one draw of 32 missed by more than 5% two times in three on the synthetic set. The seed's next
  draws are tried (up to :data:`DRAWS`: a balance criterion, as in re-randomised experiments),
  then twice the images, up to the cap; a sample that misses even at the cap says so.

Everything follows from the manifest, the codec, the size, the seed and :data:`VERSION` (random
numbers from a hash of them), so every process of a session, worker forks included, draws the
same sample; :attr:`Sample.identity` names it for what is built from it (stores, decodes).
The sample is ordered so that any prefix also spreads over the sizes (a case that keeps its
first inputs for time keeps small and large ones alike).
"""

from __future__ import annotations

import functools
import hashlib
import random
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .manifest import ImageEntry

VERSION = "1"  # bump when the drawing changes: the same settings then give another sample
TOLERANCE = 0.05  # a sample's mean megapixels and bytes per image, relative to the population's
DRAWS = 32  # draws of one size tried before the sample grows


@dataclass(frozen=True)
class Sample:
    """A case's images and how well they stand for the images they were drawn from."""

    entries: tuple[ImageEntry, ...]
    codec: str | None  # the population's codec; None: every image of the dataset
    seed: int
    asked: int  # images asked for (the session's max_images, or a case's own limit)
    cap: int  # the most images it may grow to
    draw: int  # which of the seed's draws of this size was kept (0: the first)
    population: int  # images it was drawn from
    population_mean_megapixels: float
    population_mean_bytes: float

    @functools.cached_property
    def identity(self) -> str:
        """12 hex digits over the sampled paths, in order: what is built from a sample is keyed
        by it (the same images, the same name, whichever process drew them)."""
        digest = hashlib.sha256("\n".join(e.path for e in self.entries).encode())
        return digest.hexdigest()[:12]

    @property
    def mean_megapixels(self) -> float:
        return _mean([e.megapixels for e in self.entries])

    @property
    def mean_bytes(self) -> float:
        return _mean([float(e.bytes) for e in self.entries])

    def deviation(self) -> float:
        """The larger relative difference of the mean megapixels and bytes from the population's."""
        return max(
            _relative(self.mean_megapixels, self.population_mean_megapixels),
            _relative(self.mean_bytes, self.population_mean_bytes),
        )

    @property
    def within_tolerance(self) -> bool:
        return self.deviation() <= TOLERANCE

    def note(self) -> str | None:
        """One line when the sample does not represent its population within the tolerance."""
        if self.within_tolerance:
            return None
        return (
            f"the sample of {len(self.entries)} images (the cap) has means "
            f"{self.mean_megapixels:.3f} MP and {self.mean_bytes:.0f} bytes per image against "
            f"{self.population_mean_megapixels:.3f} MP and {self.population_mean_bytes:.0f} over "
            f"{self.population} images: {self.deviation():.1%} off, more than "
            f"{TOLERANCE:.0%} (raise sample_max_images)"
        )


def _mean(values: Sequence[float]) -> float:
    return float(sum(values) / len(values)) if values else 0.0


def _relative(value: float, reference: float) -> float:
    return abs(value / reference - 1.0) if reference else 0.0


def draw(
    entries: Sequence[ImageEntry],
    n: int,
    *,
    seed: int = 0,
    cap: int | None = None,
    codec: str | None = None,
) -> Sample:
    """The sample of ``n`` images (of ``codec`` when given) that represents ``entries``, grown
    up to ``cap`` images (at least ``n``) when ``n`` cannot."""
    population, strata = _population(entries, codec)
    cap = max(n, n if cap is None else cap)

    def sample(chosen: list[int], attempt: int) -> Sample:
        return Sample(
            tuple(population[i] for i in chosen),
            codec=codec,
            seed=seed,
            asked=n,
            cap=cap,
            draw=attempt,
            population=len(population),
            population_mean_megapixels=float(strata.megapixels.mean()) if population else 0.0,
            population_mean_bytes=float(strata.bytes.mean()) if population else 0.0,
        )

    size = max(1, n)
    best: Sample | None = None
    while size < len(population):
        for attempt in range(DRAWS):
            drawn = sample(
                strata.draw(size, random.Random(_seed(seed, codec, size, attempt))), attempt
            )
            if drawn.within_tolerance:
                return drawn
            if size >= cap and (best is None or drawn.deviation() < best.deviation()):
                best = drawn
        if best is not None:  # the cap, and no draw within the tolerance: the closest
            return best
        size = min(cap, 2 * size)
    return sample(strata.everything(), 0)  # every image: the population itself


_POPULATIONS: dict[
    tuple[int, int, str | None], tuple[Sequence[ImageEntry], list[ImageEntry], _Strata]
] = {}


def _population(
    entries: Sequence[ImageEntry], codec: str | None
) -> tuple[list[ImageEntry], _Strata]:
    """The images of ``codec`` and their strata, kept for the process's last few manifests: a
    session draws many samples of one manifest, and ordering 1.28 million entries takes a second.
    The key holds the manifest's list itself, so its id cannot be reused while kept."""
    key = (id(entries), len(entries), codec)
    if key not in _POPULATIONS:
        while len(_POPULATIONS) >= 8:
            _POPULATIONS.pop(next(iter(_POPULATIONS)))
        population = [e for e in entries if codec is None or e.codec == codec]
        _POPULATIONS[key] = (entries, population, _Strata(population))
    _, population, strata = _POPULATIONS[key]
    return population, strata


def order_populations(entries: Sequence[ImageEntry]) -> None:
    """Order ``entries`` (all, and each codec's) for sampling now: the worker server does it once
    before it forks, so no case's fork orders a large manifest again."""
    for codec in [None, *sorted({e.codec for e in entries})]:
        _population(entries, codec)


def _seed(seed: int, codec: str | None, size: int, attempt: int) -> int:
    """One draw's random state, from text: the same in every process and Python build."""
    text = f"imgbench-sample-{VERSION}:{seed}:{codec}:{size}:{attempt}"
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


class _Strata:
    """A population ordered by size, with each image's class, ready for stratified draws."""

    def __init__(self, population: Sequence[ImageEntry]) -> None:
        count = len(population)
        pixels = np.fromiter((e.width * e.height for e in population), np.float64, count)
        self.megapixels = pixels / 1e6
        self.bytes = np.fromiter((e.bytes for e in population), np.float64, count)
        names = sorted({e.label or "" for e in population})
        code = {name: i for i, name in enumerate(names)}
        classes = np.fromiter((code[e.label or ""] for e in population), np.int64, count)
        # by size: the sum of the megapixel and byte ranks, ties in manifest (path) order
        rank = _ranks(self.megapixels) + _ranks(self.bytes)
        self.order = np.argsort(rank, kind="stable")
        self.classes = classes[self.order]
        counts = np.bincount(self.classes, minlength=len(names)).astype(np.float64)
        self.share = counts / max(1.0, counts.sum())

    def everything(self) -> list[int]:
        return [int(self.order[k]) for k in _spread(len(self.order))]

    def draw(self, n: int, rng: random.Random) -> list[int]:
        """One image per stratum, from the classes furthest behind their share, in an order
        whose prefixes spread over the sizes."""
        total = len(self.order)
        edges = [round(k * total / n) for k in range(n + 1)]
        taken = np.zeros(len(self.share))
        picks = []
        for k in range(n):
            classes = self.classes[edges[k] : edges[k + 1]]
            behind = self.share[classes] * (k + 1) - taken[classes]
            # any class below its share once this image counts; else the furthest behind
            candidates = np.flatnonzero(behind > 1e-9)
            if not len(candidates):
                candidates = np.flatnonzero(behind >= behind.max() - 1e-9)
            chosen = int(candidates[int(rng.random() * len(candidates))])
            taken[classes[chosen]] += 1
            picks.append(int(self.order[edges[k] + chosen]))
        return [picks[k] for k in _spread(n)]


def _ranks(values: np.ndarray) -> np.ndarray:
    ranks = np.empty(len(values), dtype=np.int64)
    ranks[np.argsort(values, kind="stable")] = np.arange(len(values))
    return ranks


def _spread(n: int) -> list[int]:
    """0..n-1 in van der Corput order (0, 1/2, 1/4, 3/4, ...): every prefix spans the range."""

    def radical_inverse(k: int) -> float:
        value, base = 0.0, 0.5
        while k:
            value += base * (k & 1)
            k >>= 1
            base /= 2
        return value

    return sorted(range(n), key=radical_inverse)
