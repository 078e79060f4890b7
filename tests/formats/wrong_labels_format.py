"""A real format (SQLite) whose reader swaps two classes' labels: the round trip must catch it."""

from __future__ import annotations

from imgbench.formats.base import FormatSpec
from imgbench.formats.libs import sqlite as real

SPEC = FormatSpec(
    name="wrong-labels-sqlite", library="broken", variant="swaps-labels", module=__name__
)
write = real.write


class Reader(real.Reader):
    def __getitem__(self, index: int) -> tuple[bytes, int]:
        data, label = super().__getitem__(index)
        return data, {0: 1, 1: 0}.get(label, label)
