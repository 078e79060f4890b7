"""The copy-on-access experiment of pytorch issue 13246: forked workers that read a Python list
copy it, page by page, because reading an object writes its reference count.

The dataset is only an index of N file paths (no images are read), kept as a Python list of
``str``, a NumPy fixed-width bytes array, a pyarrow string array, or a pandas Series of object
dtype (seed 001's failing case at ten million images: its values are Python ``str`` objects, so
a lookup writes their reference counts as a list's does). Forked DataLoader workers look up
random entries for the whole run while the memory sampler records RSS, PSS and USS of the main
process and of each worker: a list's USS grows in every worker towards the size of the index, the
two buffer-backed kinds stay flat.

``streamed`` holds no index at all, the MPDataset way: the paths are a text file, one line per
entry, and each worker reads its own byte range of it (an ``IterableDataset``), line after line,
in endless passes; memory stays that of a file handle whatever N is, at the price of sequential
order within a worker's shard.

One item is one batch of index lookups, so the row's ``images_per_s`` columns count lookups, not
images (``extra.unit`` says so).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from imgbench.loaders.plan import LoaderPlan
from imgbench.measure.case import Case, Workload
from imgbench.measure.context import CaseContext

INDEX_KINDS = ("list", "numpy", "pyarrow", "pandas", "streamed")
STREAMED = "streamed"
LOOKUPS_PER_BATCH = 4096
BATCHES_PER_ROUND = 8


def make_paths(n: int, start: int = 0) -> list[str]:
    """Paths ``start`` to ``n`` shaped like ImageNet's: about 60 characters each."""
    return [
        f"/data/imagenet/train/n{i % 1000:08d}/n{i % 1000:08d}_{i:08d}.JPEG"
        for i in range(start, n)
    ]


def make_index(kind: str, n: int, folder: Path | None = None) -> Any:
    """The index of ``n`` paths as ``kind``; ``streamed`` writes them as a text file in
    ``folder`` (once: the file is named by ``n``) and returns its path."""
    if kind == STREAMED:
        if folder is None:
            raise ValueError("a streamed index needs a folder for its text file")
        return paths_file(folder, n)
    paths = make_paths(n)
    if kind == "list":
        return paths
    if kind == "numpy":
        return np.array(paths, dtype=np.bytes_)
    if kind == "pyarrow":
        import pyarrow as pa

        return pa.array(paths, type=pa.string())
    if kind == "pandas":
        import pandas as pd

        return pd.Series(paths, dtype=object)
    raise ValueError(f"index kind {kind!r}: choose one of {INDEX_KINDS}")


def paths_file(folder: Path, n: int) -> Path:
    """``make_paths(n)`` as a text file, one path a line, written atomically if missing."""
    from imgbench.atomic import atomic_file

    path = Path(folder) / f"cow-paths-{n}.txt"
    if not path.is_file():
        with atomic_file(path) as handle:
            step = 100_000  # a chunk at a time: the file, not a list of N paths, is the point
            for start in range(0, n, step):
                # only this chunk's paths (making all up to it each time was quadratic: the
                # 10M file of `full` took over 5 minutes)
                chunk = make_paths(min(n, start + step), start)
                handle.write(("\n".join(chunk) + "\n").encode())
    return path


def index_bytes(index: Any) -> int:
    """Memory the index holds: objects and pointers for a list (and a pandas Series of objects),
    buffers for NumPy and pyarrow, nothing for a streamed file."""
    if isinstance(index, list):
        return sys.getsizeof(index) + sum(sys.getsizeof(s) for s in index)
    if isinstance(index, Path):
        return 0
    if hasattr(index, "memory_usage"):  # pandas: the pointers and every str object
        return int(index.memory_usage(deep=True, index=False))
    return int(index.nbytes)


def shard_lines(path: Path, shard: int, shards: int) -> Iterator[bytes]:
    """The lines of ``path`` that start in byte range ``shard`` of ``shards`` (every line in
    exactly one shard), newline stripped: one worker's part of a streamed index."""
    size = path.stat().st_size
    start, end = size * shard // shards, size * (shard + 1) // shards
    with path.open("rb", buffering=1 << 20) as handle:
        if start:
            handle.seek(start - 1)
            handle.readline()  # the rest of the line that began before the range
        position = handle.tell()
        while position < end:
            line = handle.readline()
            if not line:
                return
            position += len(line)
            yield line.rstrip(b"\n")


def streamed_lengths(path: Path) -> Iterator[int]:
    """What a streamed index yields in this process: the lengths of its worker's shard of
    ``path``, in endless passes (the run has no epochs); all of it outside a worker."""
    from torch.utils.data import get_worker_info

    info = get_worker_info()
    shard, shards = (info.id, info.num_workers) if info is not None else (0, 1)
    while True:
        for line in shard_lines(path, shard, shards):
            yield len(line)


class IndexDataset:
    """``dataset[i]`` looks up path i and returns its length: the access pattern, nothing more."""

    def __init__(self, index: Any) -> None:
        self.index = index
        self.lookup = self.index.__getitem__
        if hasattr(index, "iloc"):  # pandas: by position, as a DataFrame-backed dataset does
            self.lookup = index.iloc.__getitem__
        elif not isinstance(index, list | np.ndarray):  # pyarrow: a scalar per lookup, then str
            self.lookup = lambda i: index[i].as_py()

    def __len__(self) -> int:
        return len(self.index)

    def __getitem__(self, i: int) -> int:
        return len(self.lookup(i))

    def path(self, i: int) -> str:
        """Entry ``i`` as ``str`` (what the tests compare with ``make_paths``)."""
        value = self.lookup(i)
        return value.decode() if isinstance(value, bytes) else str(value)


def collate_lengths(lengths: Sequence[int]) -> tuple[Any, Any, None, None]:
    import torch

    tensor = torch.tensor(lengths, dtype=torch.int64)
    return tensor, tensor, None, None


def cow_cases(
    workers: Sequence[int], entries: int, kinds: Sequence[str] = INDEX_KINDS
) -> list[Case]:
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
            requires=("torch", "pyarrow", "pandas") if kind == "pandas" else ("torch", "pyarrow"),
            dist="torch",
        )
        for kind in kinds
        for w in workers
    ]


def build(index: Any, params: Mapping[str, Any]) -> Any:
    from imgbench.loaders.libs.torch_dataloader import TorchLoader

    if isinstance(index, Path):
        return streamed_loader(index, params)
    return TorchLoader(
        IndexDataset(index),  # type: ignore[arg-type]  # no SamplePipeline: len and [i] suffice
        params,
        collate_fn=collate_lengths,
    )


def prepare_cow(ctx: CaseContext, case: Case) -> Workload:
    from imgbench.loaders.run import LoaderRun

    params = dict(case.params)
    entries = int(params["index_entries"])
    index = make_index(params["index_kind"], entries, ctx.scratch_dir())
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
        index_entries=entries,
        index_bytes=index_bytes(index),
    )
    if isinstance(index, Path):
        run.extra.update(
            index_file_bytes=index.stat().st_size,
            index_access="each worker streams its byte range of the file, in order",
        )
    run.start()
    return Workload(
        items=list(range(n_batches)),
        fn=run.step,
        images_per_item=int(params["batch_size"]),
        cache_method="n/a: no files are read",
        extra=run.extra,
        close=run.close,
        runs_ahead=True,
    )


def plan_cases(plan: LoaderPlan) -> list[Case]:
    """The experiment's rows in a profile: the registry entry's ``experiment``."""
    if not plan.cow_workers:
        return []
    return cow_cases(plan.cow_workers, plan.cow_entries, plan.cow_kinds)


def streamed_loader(path: Path, params: Mapping[str, Any]) -> Any:
    """A ``TorchLoader`` over an ``IterableDataset`` of the paths file: no sampler, each worker
    its shard (:func:`streamed_lengths`)."""
    from torch.utils.data import IterableDataset

    from imgbench.loaders.libs.torch_dataloader import TorchLoader

    class StreamedIndex(IterableDataset[int]):
        def __iter__(self) -> Iterator[int]:
            return streamed_lengths(path)

    return TorchLoader(
        StreamedIndex(),  # type: ignore[arg-type]  # no SamplePipeline: iterated, never indexed
        params,
        collate_fn=collate_lengths,
        iterable=True,
    )
