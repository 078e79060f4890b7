"""SQLite (the standard library's ``sqlite3``): one row per image: ``id``, ``label``, ``image``.

Written with the journal off inside the temporary build folder (the folder rename is what makes
the build atomic); read through an immutable read-only URI, so no lock or journal file is touched.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator
from pathlib import Path

from imgbench.formats.base import BaseReader, FormatMeta, Record, WritePlan, batched, check_index

FILE = "data.sqlite"
BATCH = 256


def write(out: Path, records: Iterable[Record], plan: WritePlan) -> None:
    connection = sqlite3.connect(out / FILE)
    try:
        connection.execute("PRAGMA journal_mode=OFF")
        connection.execute("PRAGMA synchronous=OFF")
        connection.execute(
            "CREATE TABLE images (id INTEGER PRIMARY KEY, label INTEGER NOT NULL, image BLOB)"
        )
        for batch in batched(records, BATCH):
            connection.executemany(
                "INSERT INTO images VALUES (?, ?, ?)",
                [(r.index, r.label, r.payload) for r in batch],
            )
            connection.commit()
    finally:
        connection.close()


class Reader(BaseReader):
    def __init__(self, path: Path, meta: FormatMeta) -> None:
        super().__init__(path, meta)
        uri = f"{(self.path / FILE).resolve().as_uri()}?mode=ro&immutable=1"
        self._db = sqlite3.connect(uri, uri=True, check_same_thread=False)
        self._count = self._db.execute("SELECT count(*) FROM images").fetchone()[0]

    def __len__(self) -> int:
        return self._count

    def __getitem__(self, index: int) -> tuple[bytes, int]:
        index = check_index(index, self._count)
        image, label = self._db.execute(
            "SELECT image, label FROM images WHERE id = ?", (index,)
        ).fetchone()
        return image, label

    def __iter__(self) -> Iterator[tuple[bytes, int]]:
        yield from self._db.execute("SELECT image, label FROM images ORDER BY id")

    def close(self) -> None:
        self._db.close()
