"""A real format (SQLite) whose reader returns one flipped byte: verification must catch it."""

from __future__ import annotations

from imgbench.formats.base import FormatSpec
from imgbench.formats.libs import sqlite as real

SPEC = FormatSpec(name="broken-sqlite", library="broken", variant="flips-a-byte", module=__name__)
write = real.write


class Reader(real.Reader):
    def __getitem__(self, index: int) -> tuple[bytes, int]:
        data, label = super().__getitem__(index)
        return (data[:-1] + bytes([data[-1] ^ 1]) if index == 1 else data), label
