"""The reader stage: encoded bytes in, a C-contiguous HxWx3 uint8 RGB array out.

Every adapter honours the same contract, so any colour conversion or copy a library needs is
part of its measured time. EXIF orientation is not applied: pixels come back as stored, by
every reader, so all of them do the same work.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

CODECS = ("jpeg", "png", "webp", "bmp", "tiff")


class Reader(Protocol):
    def decode(self, data: bytes) -> np.ndarray:
        """Decode encoded image bytes to a C-contiguous HxWx3 uint8 RGB array."""
        ...


@dataclass(frozen=True)
class ReaderSpec:
    """A registry entry: enough to list, skip or build a reader without importing its library."""

    library: str  # short name used in case ids and rows, e.g. "opencv"
    variant: str  # how it is called, e.g. "imdecode-rgb"
    adapter: str  # "module:Class" of the adapter, imported only when the case runs
    requires: tuple[str, ...]  # importable modules
    dist: str  # distribution whose version the rows record
    codecs: frozenset[str] = field(default_factory=lambda: frozenset(CODECS))
    note: str = ""


class ContractError(ValueError):
    """A reader returned something other than a C-contiguous HxWx3 uint8 array."""


def check_contract(array: object, *, who: str, expected_shape: tuple[int, int] | None) -> None:
    if not isinstance(array, np.ndarray):
        raise ContractError(f"{who}: returned {type(array).__name__}, not a numpy array")
    if array.dtype != np.uint8:
        raise ContractError(f"{who}: dtype {array.dtype}, expected uint8")
    if array.ndim != 3 or array.shape[2] != 3:
        raise ContractError(f"{who}: shape {array.shape}, expected HxWx3")
    if not array.flags.c_contiguous:
        raise ContractError(f"{who}: array is not C-contiguous")
    if expected_shape is not None and array.shape[:2] != expected_shape:
        raise ContractError(f"{who}: shape {array.shape[:2]}, expected (H, W) = {expected_shape}")
