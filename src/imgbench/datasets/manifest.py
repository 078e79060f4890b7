"""The manifest: what a dataset contains, file by file, and the fingerprint that names it.

Every benchmark number depends on the images it was measured on, so the harness records the
manifest's fingerprint on each result row; two runs are only comparable when it matches.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import weakref
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from imgbench.atomic import atomic_file

MANIFEST_VERSION = "1"

CODECS = ("jpeg", "png", "webp", "bmp", "tiff")


class DatasetError(Exception):
    """A dataset cannot be used at all (missing path, empty folder, no images).

    The message is one line naming the path and the problem; CLIs print it without a traceback.
    """


@dataclass(frozen=True)
class ImageEntry:
    """One usable image; ``path`` is POSIX and relative to the dataset root."""

    path: str
    bytes: int
    codec: str
    width: int
    height: int
    mode: str
    label: str | None
    sha256: str

    @property
    def megapixels(self) -> float:
        return self.width * self.height / 1e6


@dataclass(frozen=True)
class BadFile:
    """A file left out of the dataset, with one line saying why."""

    path: str
    reason: str


_SCHEMA = pa.schema(
    [
        ("path", pa.string()),
        ("bytes", pa.int64()),
        ("codec", pa.string()),
        ("width", pa.int32()),
        ("height", pa.int32()),
        ("mode", pa.string()),
        ("label", pa.string()),
        ("sha256", pa.string()),
        ("reason", pa.string()),  # null for usable entries
    ]
)


def _percentiles(values: list[float]) -> dict[str, float]:
    if not values:
        return {"p5": float("nan"), "p50": float("nan"), "p95": float("nan")}
    p5, p50, p95 = np.percentile(np.asarray(values, dtype=float), [5, 50, 95])
    return {"p5": float(p5), "p50": float(p50), "p95": float(p95)}


def _percentiles_of_counts(counts: Mapping[float, int]) -> dict[str, float]:
    """:func:`_percentiles` (numpy's linear method) of values given as ``value -> how many``:
    memory in the number of distinct values (image sizes), not in the number of images."""
    if not counts:
        return _percentiles([])
    values = sorted(counts)
    cumulative = np.cumsum([counts[v] for v in values])
    last = int(cumulative[-1]) - 1

    def at(k: int) -> float:  # the k-th smallest value, counting from 0
        return float(values[int(np.searchsorted(cumulative, k, side="right"))])

    out = {}
    for p in (5, 50, 95):
        position = p / 100 * last
        low = math.floor(position)
        below, above = at(low), at(math.ceil(position))
        out[f"p{p}"] = below + (above - below) * (position - low)
    return out


def _summary(
    root: Path,
    fingerprint: str,
    count: int,
    total_bytes: int,
    sizes: Counter[tuple[int, int]],
    codecs: Counter[str],
    modes: Counter[str],
    n_labels: int,
    n_bad: int,
) -> dict:
    """The summary of a manifest from its counts: one per (width, height), codec and mode."""
    widths: Counter[float] = Counter()
    heights: Counter[float] = Counter()
    megapixels: Counter[float] = Counter()
    for (width, height), n in sizes.items():
        widths[width] += n
        heights[height] += n
        megapixels[width * height / 1e6] += n
    total_mp = sum(mp * n for mp, n in megapixels.items())
    return {
        "root": str(root),
        "fingerprint": fingerprint,
        "count": count,
        "total_bytes": int(total_bytes),
        "codecs": dict(sorted(codecs.items())),
        "modes": dict(sorted(modes.items())),
        "n_labels": n_labels,
        "width": _percentiles_of_counts(widths),
        "height": _percentiles_of_counts(heights),
        "megapixels": _percentiles_of_counts(megapixels),
        "mean_megapixels": total_mp / count if count else 0.0,
        "n_bad": n_bad,
    }


@dataclass
class Manifest:
    """Usable entries (sorted by path) and excluded files of one dataset root."""

    root: Path
    entries: list[ImageEntry]
    bad: list[BadFile] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.root = Path(self.root)
        self.entries = sorted(self.entries, key=lambda e: e.path)
        self.bad = sorted(self.bad, key=lambda b: b.path)

    @property
    def fingerprint(self) -> str:
        """16 hex chars of sha256 over sorted (path, bytes, sha256): same files, same name."""
        h = hashlib.sha256()
        for e in self.entries:
            h.update(f"{e.path}\t{e.bytes}\t{e.sha256}\n".encode())
        return h.hexdigest()[:16]

    def summary(self) -> dict:
        """Counts, sizes, codecs and resolution percentiles, for printing and for result rows."""
        es = self.entries
        return _summary(
            self.root,
            self.fingerprint,
            len(es),
            sum(e.bytes for e in es),
            Counter((e.width, e.height) for e in es),
            Counter(e.codec for e in es),
            Counter(e.mode for e in es),
            len({e.label for e in es if e.label is not None}),
            len(self.bad),
        )

    # -- parquet -------------------------------------------------------------------------
    def _table(self, extra: dict[str, list] | None = None) -> pa.Table:
        rows = [
            (e.path, e.bytes, e.codec, e.width, e.height, e.mode, e.label, e.sha256, None)
            for e in self.entries
        ] + [(b.path, None, None, None, None, None, None, None, b.reason) for b in self.bad]
        cols: list[Sequence[Any]] = (
            list(zip(*rows, strict=True)) if rows else [[] for _ in _SCHEMA.names]
        )
        arrays = [pa.array(list(c), type=f.type) for c, f in zip(cols, _SCHEMA, strict=True)]
        table = pa.Table.from_arrays(arrays, schema=_SCHEMA)
        for name, values in (extra or {}).items():
            table = table.append_column(name, pa.array(values, type=pa.int64()))
        meta = {
            b"imgbench.manifest_version": MANIFEST_VERSION.encode(),
            b"imgbench.root": str(self.root).encode(),
            b"imgbench.fingerprint": self.fingerprint.encode(),
        }
        return table.replace_schema_metadata(meta)

    def to_parquet(self, path: Path, *, _extra: dict[str, list] | None = None) -> None:
        """Write atomically (``imgbench.atomic``): never half a manifest."""
        with atomic_file(Path(path)) as handle:
            pq.write_table(self._table(_extra), handle)

    @classmethod
    def from_parquet(cls, path: Path) -> Manifest:
        m, _ = _read(Path(path))
        return m


def _read(path: Path) -> tuple[Manifest, dict[str, dict[str, int]]]:
    """Read a manifest parquet, plus any extra columns as {column: {path: value}} (cache mtimes)."""
    try:
        table = pq.read_table(path)
    except (OSError, pa.ArrowException) as exc:
        raise DatasetError(f"cannot read manifest {path}: {exc}") from None
    meta = table.schema.metadata or {}
    missing = [n for n in _SCHEMA.names if n not in table.column_names]
    if b"imgbench.manifest_version" not in meta or missing:
        raise DatasetError(f"not an imgbench manifest: {path}")
    root = Path(meta.get(b"imgbench.root", str(path.parent).encode()).decode())
    d = table.to_pydict()
    entries, bad = [], []
    for i, p in enumerate(d["path"]):
        if d["reason"][i] is not None:
            bad.append(BadFile(p, d["reason"][i]))
        else:
            entries.append(
                ImageEntry(
                    p,
                    int(d["bytes"][i]),
                    d["codec"][i],
                    int(d["width"][i]),
                    int(d["height"][i]),
                    d["mode"][i],
                    d["label"][i],
                    d["sha256"][i],
                )
            )
    extra = {
        n: dict(zip(d["path"], d[n], strict=True))
        for n in table.column_names
        if n not in _SCHEMA.names
    }
    return Manifest(root, entries, bad), extra


# -- streaming: a manifest written and read row group by row group ----------------------------------
STREAM_ROWS = 1024  # rows per row group of a streamed manifest (and per read batch)


@contextlib.contextmanager
def arrow_system_pool() -> Iterator[None]:
    """Arrow allocates from the C library's ``malloc`` inside (the default pool is restored).

    Measured here: with pyarrow's default (mimalloc) pool, reading and writing a manifest row
    group by row group grew peak RSS with the number of row groups (about +14 MiB from 1,100 to
    11,000 rows for the scan's cache join) although Arrow's own peak allocation stayed at a few
    MiB: mimalloc kept the freed pages. With the system pool the growth is 1-3 MiB. Buffers
    remember their pool, so switching is safe; it is process-wide, so the dataset tools use it
    around whole calls (not in generators), never around timed benchmarks.
    """
    previous = pa.default_memory_pool()
    pa.set_memory_pool(pa.system_memory_pool())
    try:
        yield
    finally:
        pa.set_memory_pool(previous)


def _row(item: ImageEntry | BadFile) -> tuple[Any, ...]:
    if isinstance(item, ImageEntry):
        e = item
        return (e.path, e.bytes, e.codec, e.width, e.height, e.mode, e.label, e.sha256, None)
    return (item.path, None, None, None, None, None, None, None, item.reason)


def _item(row: dict[str, Any]) -> ImageEntry | BadFile:
    if row["reason"] is not None:
        return BadFile(row["path"], row["reason"])
    return ImageEntry(
        row["path"],
        int(row["bytes"]),
        row["codec"],
        int(row["width"]),
        int(row["height"]),
        row["mode"],
        row["label"],
        row["sha256"],
    )


def iter_rows(path: Path, columns: Sequence[str] | None = None) -> Iterator[dict[str, Any]]:
    """The rows of a manifest parquet as dicts, in file order, one batch in memory at a time."""
    handle = pq.ParquetFile(path, pre_buffer=False)  # pre-buffering reads every row group at once
    try:
        for batch in handle.iter_batches(
            batch_size=STREAM_ROWS, columns=columns, use_threads=False
        ):
            yield from batch.to_pylist()
    finally:
        handle.close()


class ManifestWriter:
    """Writes a manifest parquet as items arrive (in path order), keeping only running totals.

    The same file as :meth:`Manifest.to_parquet` (same schema, readable by ``from_parquet``),
    except that usable entries and bad files are interleaved in path order and the fingerprint
    is in the file's key-value metadata rather than the schema's. Memory is one row group.
    """

    def __init__(self, path: Path, root: Path, extra: Sequence[str] = ()) -> None:
        self.path = Path(path)
        self.root = Path(root)
        self.extra = tuple(extra)
        fields = list(_SCHEMA) + [pa.field(name, pa.int64()) for name in self.extra]
        meta = {
            b"imgbench.manifest_version": MANIFEST_VERSION.encode(),
            b"imgbench.root": str(self.root).encode(),
        }
        self.schema = pa.schema(fields, metadata=meta)
        self._writer = pq.ParquetWriter(self.path, self.schema)
        self._rows: list[tuple[Any, ...]] = []
        self._hash = hashlib.sha256()
        self.count = 0
        self.total_bytes = 0
        self.classes: set[str] = set()
        self.n_bad = 0
        self.first_bad: BadFile | None = None

    def add(self, item: ImageEntry | BadFile, extra: Sequence[int] = ()) -> None:
        if isinstance(item, ImageEntry):
            self.count += 1
            self.total_bytes += item.bytes
            if item.label is not None:
                self.classes.add(item.label)
            self._hash.update(f"{item.path}\t{item.bytes}\t{item.sha256}\n".encode())
        else:
            self.n_bad += 1
            if self.first_bad is None:
                self.first_bad = item
        self._rows.append((*_row(item), *extra))
        if len(self._rows) >= STREAM_ROWS:
            self._flush()

    def _flush(self) -> None:
        if not self._rows:
            return
        columns = list(zip(*self._rows, strict=True))
        arrays = [pa.array(list(c), type=f.type) for c, f in zip(columns, self.schema, strict=True)]
        self._writer.write_table(pa.Table.from_arrays(arrays, schema=self.schema))
        self._rows = []

    @property
    def fingerprint(self) -> str:
        """The same 16 hex digits as :attr:`Manifest.fingerprint` (items come in path order)."""
        return self._hash.hexdigest()[:16]

    def close(self) -> None:
        self._flush()
        self._writer.add_key_value_metadata({"imgbench.fingerprint": self.fingerprint})
        self._writer.close()

    def abort(self) -> None:
        self._rows = []
        self._writer.close()


class ManifestFile:
    """A manifest that stays on disk: its totals in memory, its entries streamed from the parquet.

    ``len()`` and ``iter()`` give the usable entries in path order (what ``build_format``
    consumes), ``iter_bad()`` the excluded files; ``load()`` reads everything into a
    :class:`Manifest`. A temporary file (``temporary=True``) is removed by ``close()`` or when the
    object is collected.
    """

    def __init__(self, writer: ManifestWriter, *, temporary: bool = False) -> None:
        self.path = writer.path
        self.root = writer.root
        self.count = writer.count
        self.total_bytes = writer.total_bytes
        self.classes = tuple(sorted(writer.classes))
        self.n_bad = writer.n_bad
        self.fingerprint = writer.fingerprint
        self._finalizer = weakref.finalize(self, _remove, str(self.path)) if temporary else None

    def __len__(self) -> int:
        return self.count

    def __iter__(self) -> Iterator[ImageEntry]:
        for row in iter_rows(self.path, _SCHEMA.names):
            if row["reason"] is None:
                item = _item(row)
                assert isinstance(item, ImageEntry)
                yield item

    def iter_bad(self) -> Iterator[BadFile]:
        for row in iter_rows(self.path, ["path", "reason"]):
            if row["reason"] is not None:
                yield BadFile(row["path"], row["reason"])

    def load(self) -> Manifest:
        return Manifest(self.root, list(self), list(self.iter_bad()))

    def summary(self) -> dict:
        """:meth:`Manifest.summary`, streamed from the file: memory in the number of distinct
        image sizes, codecs and modes, not in the number of images."""
        sizes: Counter[tuple[int, int]] = Counter()
        codecs: Counter[str] = Counter()
        modes: Counter[str] = Counter()
        for row in iter_rows(self.path, ["codec", "width", "height", "mode", "reason"]):
            if row["reason"] is None:
                sizes[(row["width"], row["height"])] += 1
                codecs[row["codec"]] += 1
                modes[row["mode"]] += 1
        return _summary(
            self.root,
            self.fingerprint,
            self.count,
            self.total_bytes,
            sizes,
            codecs,
            modes,
            len(self.classes),
            self.n_bad,
        )

    def close(self) -> None:
        if self._finalizer is not None:
            self._finalizer()

    def __enter__(self) -> ManifestFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _remove(path: str) -> None:
    Path(path).unlink(missing_ok=True)
