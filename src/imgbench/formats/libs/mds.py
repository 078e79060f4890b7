"""Mosaic Streaming (MDS): ``MDSWriter`` shards + ``index.json``, read with ``StreamingDataset``.

Runs in the ``mosaic`` environment (``imgbench env create mosaic``): ``mosaicml-streaming``
cannot share the main one (``imgbench.envs``). Two columns, ``image`` (``bytes``: the source file
as it is) and ``label`` (``int``), no compression, 64 MB shards (MDSWriter's default size).

The reader is a ``StreamingDataset`` on the folder itself (``local=``, no ``remote``: read in
place, no cache copy): ``reader[i]`` is ``dataset[i]`` (the shard reader seeks to the sample in
the shard file, opened per sample), ``iter(reader)`` the dataset's own iterator (its prepare and
ready threads ahead of the yield loop), unshuffled, on one canonical node so that it yields in
index order. Closing it stops those threads and frees what it holds in shared memory
(``/dev/shm``) and in the temp folder (file locks): the worker processes that run cases end
without running ``atexit``, where streaming would do that itself.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from imgbench.formats.base import BaseReader, FormatMeta, Record, WritePlan, check_index

COLUMNS = {"image": "bytes", "label": "int"}
SIZE_LIMIT = 1 << 26  # 64 MB shards: MDSWriter's default

# streaming.base.constant: what a dataset keeps in shared memory and as file locks, per prefix
_SHM_NAMES = (
    "locals",
    "barrier",
    "next_epoch",
    "cache_usage",
    "shard_states",
    "shard_access_times",
    "resume",
    "epoch_shape",
    "epoch_data",
)
_FILELOCKS = ("barrier_filelock", "cache_filelock")


def write(out: Path, records: Iterable[Record], plan: WritePlan) -> None:
    from streaming import MDSWriter

    # MDSWriter wants an empty folder, and ``out`` already holds imgbench's bookkeeping: the
    # shards go to a folder of their own, then move up beside it (same file system: renames)
    shards = out / ".mds-writer"
    with MDSWriter(
        out=str(shards), columns=COLUMNS, compression=None, size_limit=SIZE_LIMIT
    ) as writer:
        for record in records:
            writer.write({"image": record.payload, "label": record.label})
    for path in sorted(shards.iterdir()):
        path.rename(out / path.name)
    shards.rmdir()


def open_dataset(local: str, remote: str | None = None) -> Any:
    """A ``StreamingDataset`` read in order: unshuffled, one canonical node, batches of one."""
    from streaming import StreamingDataset

    return StreamingDataset(
        local=local,
        remote=remote,
        shuffle=False,
        num_canonical_nodes=1,
        batch_size=1,  # iteration requires one (per device); records are read one at a time
        download_retry=1,
    )


def item(sample: dict[str, Any]) -> tuple[bytes, int]:
    return bytes(sample["image"]), int(sample["label"])


def release(dataset: Any) -> None:
    """Stop the dataset's iteration threads and free its shared memory and file locks."""
    if dataset is None:
        return
    iterator = getattr(dataset, "_iterator", None)
    if iterator is not None:
        iterator.exit()
    executor = getattr(dataset, "_executor", None)
    if executor is not None:
        executor.shutdown(wait=True)
    prefix = getattr(dataset, "_shm_prefix_int", None)
    for value in vars(dataset).values():  # SharedMemory, or SharedScalar/SharedArray/barrier
        shm = value if hasattr(value, "cleanup") else getattr(value, "shm", None)
        if shm is not None and hasattr(shm, "cleanup"):
            with contextlib.suppress(Exception):  # already gone, or never created by us
                shm.cleanup()
    if prefix is None:
        return
    from tempfile import gettempdir

    for name in _SHM_NAMES:  # anything the cleanups above did not own
        Path("/dev/shm", f"{prefix:06}_{name}").unlink(missing_ok=True)
    for name in _FILELOCKS:
        Path(gettempdir(), f"{prefix:06}_{name}").unlink(missing_ok=True)


class OverDataset:
    """Records by index and in order from ``self._dataset`` (local and S3 readers share it)."""

    _dataset: Any

    def __len__(self) -> int:
        return int(self._dataset.num_samples)

    def __getitem__(self, index: int) -> tuple[bytes, int]:
        return item(self._dataset[check_index(index, int(self._dataset.num_samples))])

    def __iter__(self) -> Iterator[tuple[bytes, int]]:
        dataset = self._dataset
        try:
            for sample in dataset:
                yield item(sample)
        finally:  # stopped early (a round ends mid-store): its threads stop with it
            if getattr(dataset, "_iterator", None) is not None:
                dataset._iterator.exit()


class Reader(OverDataset, BaseReader):
    def __init__(self, path: Path, meta: FormatMeta) -> None:
        super().__init__(path, meta)
        self._dataset = open_dataset(os.fspath(self.path))

    def close(self) -> None:
        release(self._dataset)
        self._dataset = None
