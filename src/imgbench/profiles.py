"""Benchmark profiles: how much of the matrix runs, on which dataset, with how many rounds.

``quick`` is this project's CI (every stage thinned, a few minutes on 2 cores), ``default`` is
``make bench`` (under 20 minutes on 2 cores), ``full`` is everything.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Profile:
    name: str
    dataset: str  # recipe used when no --dataset is given
    rounds: int  # timed rounds per case
    warmup_rounds: int
    max_images: int  # images per timed round (per codec), taken from the start of the manifest
    thread_modes: tuple[int | None, ...]  # 1 = pinned single thread, None = library default
    description: str
    # isolated environments `imgbench run` also runs (their own cases only)
    environments: tuple[str, ...] = ()
    # more datasets the readers and loaders benches run on, so every codec and the whole
    # pipeline meet real photos; those sessions are "secondary" (loaders thin their plan)
    reader_datasets: tuple[str, ...] = ()
    secondary: bool = False  # this session measures one of reader_datasets (--imgbench-secondary)


PROFILES: dict[str, Profile] = {
    p.name: p
    for p in (
        Profile(
            name="quick",
            dataset="synthetic-small",
            rounds=5,
            warmup_rounds=1,
            max_images=16,
            thread_modes=(1,),
            description="CI smoke profile: every stage thinned; a few minutes on 2 cores",
        ),
        Profile(
            name="default",
            dataset="synthetic-imagenet-like",
            rounds=10,
            warmup_rounds=2,
            max_images=64,
            thread_modes=(1, None),
            description="make bench: the default matrix, under 20 minutes on 2 cores",
            environments=("pillow-simd", "tensorflow"),
            reader_datasets=("real-sample",),
        ),
        Profile(
            name="full",
            dataset="synthetic-imagenet-like",
            rounds=20,
            warmup_rounds=3,
            max_images=256,
            thread_modes=(1, None),
            description="everything, with more rounds",
            environments=("pillow-simd", "tensorflow"),
            reader_datasets=("real-sample", "synthetic-grid"),
        ),
    )
}


def get_profile(name: str) -> Profile:
    try:
        return PROFILES[name]
    except KeyError:
        raise ValueError(f"unknown profile {name!r}; choose one of {sorted(PROFILES)}") from None
