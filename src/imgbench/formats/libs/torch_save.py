"""``torch.save`` shards: ``{"images": [uint8 tensor, ...], "labels": int64 tensor}`` per ``.pth``.

How people pack small datasets for PyTorch: encoded images as 1-D uint8 tensors (what
``torchvision.io.read_file`` returns). Plain ``bytes`` would cost ~1.5x on disk: ``torch.save``
pickles with protocol 2, which stores bytes as latin-1 text, two bytes for each byte >= 0x80.

Loading is all-or-nothing per shard (``torch.load(weights_only=True)``), so a random read loads
a whole shard (every time: no cache, so the figure does not depend on how many images a round
touches).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from imgbench.formats.base import BaseReader, FormatMeta, Record, WritePlan, batched, check_index

SHARD = 64  # records per .pth file


def write(out: Path, records: Iterable[Record], plan: WritePlan) -> None:
    import torch

    for shard, batch in enumerate(batched(records, SHARD)):
        torch.save(
            {
                "images": [
                    torch.frombuffer(bytearray(r.payload), dtype=torch.uint8) for r in batch
                ],
                "labels": torch.tensor([r.label for r in batch], dtype=torch.int64),
            },
            out / f"shard-{shard:06d}.pth",
        )


class Reader(BaseReader):
    def __init__(self, path: Path, meta: FormatMeta) -> None:
        super().__init__(path, meta)
        self._shards = sorted(self.path.glob("shard-*.pth"))
        self._count = meta.count

    def _load(self, shard: int) -> tuple[list[bytes], list[int]]:
        import torch

        content = torch.load(self._shards[shard], weights_only=True)
        return [t.numpy().tobytes() for t in content["images"]], content["labels"].tolist()

    def __getitem__(self, index: int) -> tuple[bytes, int]:
        import torch

        shard, offset = divmod(check_index(index, self._count), SHARD)
        content = torch.load(self._shards[shard], weights_only=True)
        return content["images"][offset].numpy().tobytes(), int(content["labels"][offset])

    def __iter__(self) -> Iterator[tuple[bytes, int]]:
        for shard in range(len(self._shards)):
            images, labels = self._load(shard)
            yield from zip(images, labels, strict=True)
