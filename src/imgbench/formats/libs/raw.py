"""The raw ceiling: the same image bytes as one concatenated file, read with plain ``read`` calls.

No format, no library: one unbuffered ``read(size)`` per image, in order. Each format's read rate
can be set against this row: it is what the disk (cold) or the page cache (warm) gives.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from imgbench.datasets.manifest import ImageEntry

FILE = "concatenated.bin"


def build_concatenated(
    root: Path, entries: Sequence[ImageEntry], target: Path
) -> tuple[Path, list[int]]:
    """Write the bytes of ``entries`` back to back into ``target/FILE``; returns (path, sizes).

    Files that vanished or became unreadable are left out (their size is not listed).
    """
    target.mkdir(parents=True, exist_ok=True)
    path = target / FILE
    tmp = target / f".{FILE}.{os.getpid()}-{uuid.uuid4().hex[:8]}.tmp"
    sizes = []
    try:
        with tmp.open("wb") as out:
            for entry in entries:
                try:
                    data = (Path(root) / entry.path).read_bytes()
                except OSError:
                    continue
                out.write(data)
                sizes.append(len(data))
            out.flush()
            os.fsync(out.fileno())
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path, sizes
