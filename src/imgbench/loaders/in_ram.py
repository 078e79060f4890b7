"""The in-RAM ceilings: the pool held in memory before the first batch, so a loader row says how
far a pipeline is from one with nothing left to read (``bytes``) or to read and decode
(``decoded``, seed 000's preload of the whole dataset as arrays).

Both read the pool once through the pipeline's own source (the dataset's files or a built
format), untimed, in the measuring process before the loader starts its workers; forked workers
share the pages. Each store is one contiguous NumPy buffer with an offset table, not a list of
objects: a worker's reads touch no reference count on the pool's pages, so nothing is copied on
access (``imgbench.loaders.cow``). The decoded pool is decoded by the pipeline's decoder, so each
sample's pixels are the ones that decoder would have handed the augmentation; a sample is handed
over as a read-only view (the augmentation makes its own output, as from a decoded array).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import numpy as np

from imgbench.loaders.base import clock


class _Pool:
    """One buffer, an offset table and each sample's label; ``origin`` names a sample's file."""

    def __init__(self, origin: Any, parts: list[np.ndarray], labels: list[int]) -> None:
        sizes = np.fromiter((p.nbytes for p in parts), dtype=np.int64, count=len(parts))
        self.offsets = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
        self.buffer = np.empty(int(self.offsets[-1]), dtype=np.uint8)
        for part, start in zip(parts, self.offsets[:-1], strict=True):
            self.buffer[start : start + part.nbytes] = part.reshape(-1).view(np.uint8)
        self.buffer.flags.writeable = False
        self.labels = np.asarray(labels, dtype=np.int64)
        self.origin = origin

    def __len__(self) -> int:
        return len(self.labels)

    @property
    def nbytes(self) -> int:
        return int(self.buffer.nbytes)

    def _slice(self, index: int) -> np.ndarray:
        return self.buffer[self.offsets[index] : self.offsets[index + 1]]

    def name(self, index: int) -> str:
        name = getattr(self.origin, "name", None)
        return str(name(index)) if callable(name) else f"sample {index} of the pool"


class BytesInRam(_Pool):
    """Every sample's encoded bytes, read once: a sample costs a copy out of RAM, no read call."""

    def __init__(self, source: Any) -> None:
        begin = clock()
        parts, labels = [], []
        for index in range(len(source)):
            payload, label = source[index]
            parts.append(np.frombuffer(payload, dtype=np.uint8))
            labels.append(int(label))
        super().__init__(source, parts, labels)
        self.preload_s = clock() - begin

    def __getitem__(self, index: int) -> tuple[bytes, int]:
        return self._slice(index).tobytes(), int(self.labels[index])


class DecodedInRam(_Pool):
    """Every sample decoded once by ``decode`` (HxWx3 uint8): a sample costs its augmentation."""

    def __init__(self, source: Any, decode: Callable[[bytes], np.ndarray]) -> None:
        begin = clock()
        parts, labels, shapes = [], [], []
        for index in range(len(source)):
            payload, label = source[index]
            try:
                image = np.ascontiguousarray(decode(payload))
            except Exception as exc:  # the error names the file, as the pipeline's would
                name = getattr(source, "name", None)
                where = name(index) if callable(name) else f"sample {index}"
                raise ValueError(f"{where}: {type(exc).__name__}: {exc}") from exc
            if image.dtype != np.uint8 or image.ndim != 3:
                raise ValueError(f"decoded to {image.dtype} {image.shape}, not HxWxC uint8")
            parts.append(image)
            shapes.append(image.shape)
            labels.append(int(label))
        super().__init__(source, parts, labels)
        self.shapes = np.asarray(shapes, dtype=np.int64).reshape(-1, 3)
        self.preload_s = clock() - begin

    def __getitem__(self, index: int) -> tuple[np.ndarray, int]:
        image = self._slice(index).reshape(tuple(int(v) for v in self.shapes[index]))
        return image, int(self.labels[index])


def preloaded(source: Any, preload: str, decoder: str) -> BytesInRam | DecodedInRam:
    """``source`` held in RAM as ``preload`` says (``bytes`` or ``decoded``, by ``decoder``, a
    readers-registry ``library/variant``); the source's own handles are closed afterwards."""
    try:
        if preload == "bytes":
            return BytesInRam(source)
        if preload != "decoded":
            raise ValueError(f"preload {preload!r}: bytes or decoded")
        from imgbench.readers.registry import build_reader, find_spec

        library, variant = decoder.split("/", 1)
        return DecodedInRam(source, build_reader(find_spec(library, variant)).decode)
    finally:
        close = getattr(source, "close", None)
        if close is not None:
            with contextlib.suppress(Exception):
                close()
