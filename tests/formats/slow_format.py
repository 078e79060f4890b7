"""A real format (LMDB) whose writer pauses after each record, so a test can kill it mid-write."""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from imgbench.formats.base import FormatSpec, Record, WritePlan
from imgbench.formats.libs import lmdb as real

Reader = real.Reader

SPEC = FormatSpec(
    name="lmdb",
    library="lmdb",
    variant="key-per-image",
    module=__name__,
    requires=("lmdb",),
    dist="lmdb",
)


def write(out: Path, records: Iterable[Record], plan: WritePlan) -> None:
    def slow() -> Iterator[Record]:
        for record in records:
            yield record
            (out / "progress").write_text(str(record.index))
            time.sleep(0.2)

    real.write(out, slow(), plan)
