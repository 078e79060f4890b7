"""The reader stage: encoded bytes (or a path) in, a C-contiguous HxWx3 uint8 RGB array out.

Every adapter honours the same contract, so any colour conversion or copy a library needs is
part of its measured time. EXIF orientation is not applied: pixels come back as stored, by
every reader, so all of them do the same work. The other pixel policies (alpha, 16 bit,
palette, grayscale) are in ``imgbench.readers.pixels``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from imgbench.library import LibrarySpec
from imgbench.readers.plan import CODECS as CODECS

JPEG_ONLY = frozenset({"jpeg"})


class Reader(Protocol):
    def decode(self, data: bytes) -> np.ndarray:
        """Decode encoded image bytes to a C-contiguous HxWx3 uint8 RGB array."""
        ...

    def read(self, path: str) -> np.ndarray:
        """Read a file and decode it (the library's own path API where it has one)."""
        ...


class NativeReader(Reader, Protocol):
    """A reader that can also hand over its library's own image object, undecoded to NumPy.

    ``native`` names that object as the augment stage's input kinds do (``"pil"``): a loader
    pipeline whose augmentation takes that kind gets ``decode_native`` and skips the array round
    trip (``imgbench.loaders.pipeline.build_stages``). Same pixels as ``decode``, same policy.
    """

    native: str

    def decode_native(self, data: bytes) -> Any:
        """Decode encoded bytes to the library's own RGB image object."""
        ...


def native_kind(reader: object) -> str | None:
    """The input kind of the image object ``reader`` hands over natively, or None."""
    kind = getattr(reader, "native", None)
    declared = isinstance(kind, str) and callable(getattr(reader, "decode_native", None))
    return kind if declared else None


class BytesReader:
    """Base for adapters: ``read`` reads the file's bytes and decodes them, unless overridden."""

    def decode(self, data: bytes) -> np.ndarray:
        raise NotImplementedError

    def read(self, path: str) -> np.ndarray:
        return self.decode(Path(path).read_bytes())


@dataclass(frozen=True, kw_only=True)
class ReaderSpec(LibrarySpec):
    """A reader registry entry: the adapter to build, the codecs it decodes, its output."""

    adapter: str  # "module:Class" of the adapter, imported only when the case runs
    codecs: frozenset[str] = field(default_factory=lambda: frozenset(CODECS))
    # "full": the whole image; "reduced": the library decodes at 1/reduce of each side;
    # "resize": full decode, then an antialiased resize to the reduced size (the baseline).
    output: str = "full"
    disk_call: str = "read the file's bytes, then decode"  # what `read(path)` does
    # True: a timed call is the adapter's ``decode_batch(list[bytes]) -> list[array]`` on a list
    # of the plan's ``batch_sizes`` images (memory mode), for libraries that batch and thread
    # internally; ``decode(bytes)`` (verification) is a batch of one through the same call
    batched: bool = False


class ContractError(ValueError):
    """A reader returned something other than a C-contiguous HxWx3 uint8 array."""


def contract_problem(array: object) -> str | None:
    """What is wrong with a reader's output under the stage's contract, or None."""
    if not isinstance(array, np.ndarray):
        return f"returned {type(array).__name__}, not a numpy array"
    if array.dtype != np.uint8:
        return f"dtype {array.dtype}, expected uint8"
    if array.ndim != 3 or array.shape[2] != 3:
        return f"shape {array.shape}, expected HxWx3"
    if not array.flags.c_contiguous:
        return "array is not C-contiguous"
    return None


def check_contract(array: object, *, who: str, expected_shape: tuple[int, int] | None) -> None:
    problem = contract_problem(array)
    if problem is not None:
        raise ContractError(f"{who}: {problem}")
    assert isinstance(array, np.ndarray)  # contract_problem said so
    if expected_shape is not None and array.shape[:2] != expected_shape:
        raise ContractError(f"{who}: shape {array.shape[:2]}, expected (H, W) = {expected_shape}")
