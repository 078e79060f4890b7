"""The copy-on-access experiment of pytorch issue 13246: forked workers that read a Python list
copy it, page by page, because reading an object writes its reference count.

The dataset is only an index of N file paths (no images are read), kept as a Python list of
``str``, a NumPy fixed-width bytes array, or a pyarrow string array. Forked DataLoader workers
look up random entries for the whole run while the memory sampler records RSS, PSS and USS of
the main process and of each worker: a list's USS grows in every worker towards the size of the
index, the two buffer-backed kinds stay flat. One item is one batch of index lookups, so the
row's ``images_per_s`` columns count lookups, not images (``extra.unit`` says so).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from imgbench.loaders.plan import LoaderPlan
from imgbench.measure.case import Case, Workload
from imgbench.measure.context import CaseContext

INDEX_KINDS = ("list", "numpy", "pyarrow")
LOOKUPS_PER_BATCH = 4096
BATCHES_PER_ROUND = 8


def make_paths(n: int) -> list[str]:
    """Paths shaped like ImageNet's: about 60 characters each."""
    return [f"/data/imagenet/train/n{i % 1000:08d}/n{i % 1000:08d}_{i:08d}.JPEG" for i in range(n)]


def make_index(kind: str, n: int) -> Any:
    paths = make_paths(n)
    if kind == "list":
        return paths
    if kind == "numpy":
        return np.array(paths, dtype=np.bytes_)
    if kind == "pyarrow":
        import pyarrow as pa

        return pa.array(paths, type=pa.string())
    raise ValueError(f"index kind {kind!r}: choose one of {INDEX_KINDS}")


def index_bytes(index: Any) -> int:
    """Memory the index holds: objects and pointers for a list, buffers for the others."""
    if isinstance(index, list):
        return sys.getsizeof(index) + sum(sys.getsizeof(s) for s in index)
    return int(index.nbytes)


class IndexDataset:
    """``dataset[i]`` looks up path i and returns its length: the access pattern, nothing more."""

    def __init__(self, index: Any) -> None:
        self.index = index
        self.lookup = self.index.__getitem__
        if not isinstance(index, list | np.ndarray):  # pyarrow: a scalar per lookup, then str
            self.lookup = lambda i: index[i].as_py()

    def __len__(self) -> int:
        return len(self.index)

    def __getitem__(self, i: int) -> int:
        return len(self.lookup(i))


def collate_lengths(lengths: Sequence[int]) -> tuple[Any, Any, None, None]:
    import torch

    tensor = torch.tensor(lengths, dtype=torch.int64)
    return tensor, tensor, None, None


def cow_cases(workers: Sequence[int], entries: int) -> list[Case]:
    return [
        Case(
            stage="loader",
            library="cow-experiment",
            variant=f"index-{kind}",
            prepare=prepare_cow,
            params={
                "index_kind": kind,
                "index_entries": entries,
                "workers": w,
                "batch_size": LOOKUPS_PER_BATCH,
                "batches_per_round": BATCHES_PER_ROUND,
                "start_method": "fork",
                "persistent_workers": True,
                "threads": 1,
            },
            requires=("torch", "pyarrow"),
            dist="torch",
        )
        for kind in INDEX_KINDS
        for w in workers
    ]


def build(index: Any, params: Mapping[str, Any]) -> Any:
    from imgbench.loaders.torch_dataloader import TorchLoader

    return TorchLoader(
        IndexDataset(index),  # type: ignore[arg-type]  # no SamplePipeline: len and [i] suffice
        params,
        collate_fn=collate_lengths,
    )


def prepare_cow(ctx: CaseContext, case: Case) -> Workload:
    from imgbench.loaders.run import LoaderRun

    params = dict(case.params)
    index = make_index(params["index_kind"], int(params["index_entries"]))
    loader = build(index, params)
    n_batches = int(params["batches_per_round"])
    run = LoaderRun(
        loader,
        f"copy-on-access {params['index_kind']} ({params['workers']} workers)",
        parallel=max(1, int(params["workers"])),
        warmup_batches=ctx.settings.warmup_rounds * n_batches,
        memory_interval_s=0.25,
    )
    run.extra.update(
        unit="index lookups, not images: images_per_s columns count lookups",
        index_kind=params["index_kind"],
        index_entries=len(index),
        index_bytes=index_bytes(index),
    )
    run.start()
    return Workload(
        items=list(range(n_batches)),
        fn=run.step,
        images_per_item=int(params["batch_size"]),
        cache_method="n/a: no files are read",
        extra=run.extra,
        close=run.close,
    )


def plan_cases(plan: LoaderPlan) -> list[Case]:
    """The experiment's rows in a profile: the registry entry's ``experiment``."""
    return cow_cases(plan.cow_workers, plan.cow_entries) if plan.cow_workers else []
