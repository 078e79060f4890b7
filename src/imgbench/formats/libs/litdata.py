"""LitData (Lightning): ``BinaryWriter`` chunks + ``index.json``, read with ``StreamingDataset``.

``litdata.optimize`` drives the same ``BinaryWriter`` from its own worker processes; imgbench
feeds it the shared record stream instead, so skipped files and progress work as for every
format. A local ``input_dir`` is read in place (no cache copy). Install with
``pip install --no-deps litdata`` plus its light dependencies: its declared dependencies pull
torchvision and a second torch.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from imgbench.formats.base import BaseReader, FormatMeta, Record, WritePlan, check_index

CHUNK_BYTES = "64MB"


def write(out: Path, records: Iterable[Record], plan: WritePlan) -> None:
    from litdata.streaming.writer import BinaryWriter

    writer = BinaryWriter(str(out), chunk_bytes=CHUNK_BYTES)
    for record in records:
        writer.add_item(record.index, {"image": record.payload, "label": record.label})
    writer.done()
    writer.merge()


class Reader(BaseReader):
    def __init__(self, path: Path, meta: FormatMeta) -> None:
        from litdata import StreamingDataset

        super().__init__(path, meta)
        self._dataset = StreamingDataset(str(self.path), shuffle=False)

    def __len__(self) -> int:
        return len(self._dataset)

    def __getitem__(self, index: int) -> tuple[bytes, int]:
        item = self._dataset[check_index(index, len(self._dataset))]
        return item["image"], int(item["label"])

    def __iter__(self) -> Iterator[tuple[bytes, int]]:
        try:
            for item in self._dataset:
                yield item["image"], int(item["label"])
        finally:  # every iteration makes a new cache; its chunk mapping would outlive it
            self._unmap()

    def _unmap(self) -> None:
        """Unmap the chunk litdata keeps mapped, or cold reads cannot evict it."""
        cache = getattr(self._dataset, "cache", None)
        loader = getattr(getattr(cache, "_reader", None), "_item_loader", None)
        if loader is not None and hasattr(loader, "close"):
            loader.close(0)  # PyTreeLoader.close ignores the chunk index: it closes its chunk

    def close(self) -> None:
        self._unmap()
        self._dataset = None
