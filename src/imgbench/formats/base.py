"""The storage-format stage: a writer builds a format from a manifest, a reader opens it.

Every format module has the same two parts:

* ``write(out, records, plan)`` consumes a stream of :class:`Record` (memory flat in the dataset
  size) and writes the format's files into ``out``, an empty folder;
* ``Reader(path, meta)``: ``len()``, ``reader[i] -> (payload, label)`` (map-style random access),
  ``iter(reader)`` (sequential, in index order, the way the format is meant to be streamed) and
  ``close()``.

The payload is the stored image bytes (``bytes``) or, for formats that store decoded pixels, a
fixed-size HxWx3 uint8 array (``numpy.ndarray``, a copy: reading it really touches the data).
Labels are ints: the index of the entry's class in the sorted class names, -1 when unlabelled.

:func:`build_format` makes every build atomic: the writer runs in a temporary folder beside the
target, every file is fsynced, a completion marker with the record count and a content hash is
written last, and only then is the folder renamed to the target. A killed or disk-full writer
leaves a ``.NAME.partial-*`` folder without a marker, which :func:`open_format` refuses and the
next build removes.
"""

from __future__ import annotations

import collections
import contextlib
import hashlib
import importlib
import io
import itertools
import json
import os
import sys
import time
from collections.abc import Generator, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal, Protocol, cast

import numpy as np

from imgbench.atomic import atomic_folder, fsync_tree
from imgbench.attrs import load_attr
from imgbench.iters import batched as batched
from imgbench.library import LibrarySpec

if TYPE_CHECKING:
    from imgbench.datasets.manifest import ImageEntry

Stores = Literal["bytes", "array"]
Payload = bytes | np.ndarray

# Formats that store decoded pixels keep them at this fixed size: the shorter side resized to it
# (antialiased bilinear), then a centre crop, the way people pre-resize before training.
ARRAY_SIZE = 256

META_DIR = "_imgbench"  # imgbench's bookkeeping inside a format folder; not part of the format
MARKER = "complete.json"
KEYS = "keys.tsv"
MARKER_VERSION = 1


class FormatError(RuntimeError):
    """A format folder cannot be used: incomplete, foreign, or inconsistent. One line, with path."""


@dataclass(frozen=True)
class Record:
    """One image as a writer receives it: its position in the format, label and payload."""

    index: int
    key: str  # the source path, relative to the dataset root
    label: int
    payload: Payload
    codec: str  # codec of the source file ("jpeg", "png", ...), e.g. for file extensions


@dataclass(frozen=True)
class Packing:
    """What a conversion does on the way, as ``im2rec --resize N --quality Q --chunks K`` does:
    the shorter side to ``resize_short`` (aspect kept, never upscaled), JPEG re-encoded at
    ``quality``, the store split into ``shards`` files. A store packed with a resize or a
    quality holds JPEG bytes whatever the source codec (im2rec's default encoding)."""

    resize_short: int | None = None
    quality: int | None = None
    shards: int = 1

    def __post_init__(self) -> None:
        if self.resize_short is not None and self.resize_short < 1:
            raise ValueError(f"--resize-short must be a positive side, not {self.resize_short}")
        if self.quality is not None and not 1 <= self.quality <= 100:
            raise ValueError(f"--quality must be 1-100, not {self.quality}")
        if self.shards < 1:
            raise ValueError(f"--shards must be at least 1, not {self.shards}")

    @property
    def reencodes(self) -> bool:
        return self.resize_short is not None or self.quality is not None

    def as_pairs(self) -> tuple[tuple[str, int], ...]:
        """What the marker records: only what was asked (an empty tuple for a plain copy)."""
        pairs = [("resize_short", self.resize_short), ("quality", self.quality)]
        if self.shards > 1:
            pairs.append(("shards", self.shards))
        return tuple((k, v) for k, v in pairs if v is not None)


REENCODE_QUALITY = 95  # a resize without --quality re-encodes at im2rec's default


def repack_jpeg(data: bytes, packing: Packing) -> bytes:
    """The image as JPEG, its shorter side brought down to ``resize_short`` (never up)."""
    from PIL import Image

    with Image.open(io.BytesIO(data)) as opened:
        image = opened.convert("RGB")
    side = packing.resize_short
    w, h = image.size
    if side is not None and min(w, h) > side:
        scale = side / min(w, h)
        size = (side, max(1, round(h * scale))) if w <= h else (max(1, round(w * scale)), side)
        image = image.resize(size, Image.Resampling.BILINEAR, reducing_gap=3.0)
    out = io.BytesIO()
    image.save(out, "JPEG", quality=packing.quality or REENCODE_QUALITY)
    return out.getvalue()


@dataclass(frozen=True)
class WritePlan:
    """What a writer may need to know before the first record arrives."""

    count_hint: int  # upper bound on the number of records (some may be skipped)
    stores: Stores
    array_shape: tuple[int, int, int] | None = None  # per-record shape for array formats
    mean_record_bytes: float = 0.0  # of the source files, for sizing shards and row groups
    shards: int = 1  # files to split the records into (``--shards``); 1: the format's own layout

    def per_shard(self) -> int:
        """Records per shard when ``shards`` > 1 (the last shard may hold fewer)."""
        return max(1, -(-self.count_hint // self.shards))


@dataclass(frozen=True)
class FormatMeta:
    """What the completion marker says; given to every reader."""

    name: str
    count: int
    classes: tuple[str, ...]
    stores: Stores
    array_shape: tuple[int, int, int] | None
    payload_sha256: str
    source_bytes: int
    bytes_on_disk: int
    skipped: tuple[tuple[str, str], ...] = ()
    packing: tuple[tuple[str, int], ...] = ()  # what the conversion did (Packing.as_pairs)


@dataclass(frozen=True, kw_only=True)
class FormatSpec(LibrarySpec):
    """A format registry entry: its name, its module, and what it stores."""

    name: str  # unique, also the folder name, e.g. "hdf5-vlen"; what plans select it by
    module: str  # module with ``write`` and ``Reader``, imported only when needed
    stores: Stores = "bytes"
    parallel_write: bool = False  # decode work that a process pool spreads over every core
    version_attr: str | None = None  # "module:attribute" for a version that is not a dist's

    @property
    def key(self) -> str:
        return self.name

    def load(self) -> ModuleType:
        return importlib.import_module(self.module)

    def version(self) -> str | None:
        """The ``version_attr`` value (rows take ``dist``'s version when this is None)."""
        if self.version_attr is None:
            return None
        return str(load_attr(self.version_attr))


class BaseReader:
    """Defaults for readers: sequential iteration through ``__getitem__``, and a context manager."""

    def __init__(self, path: Path, meta: FormatMeta) -> None:
        self.path = Path(path)
        self.meta = meta

    def __len__(self) -> int:
        return self.meta.count

    def __getitem__(self, index: int) -> tuple[Payload, int]:  # pragma: no cover - abstract
        raise NotImplementedError

    def __iter__(self) -> Iterator[tuple[Payload, int]]:
        for index in range(len(self)):
            yield self[index]

    def close(self) -> None:
        """Release files and mappings (cold reads need them gone before evicting)."""

    def __enter__(self) -> BaseReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def check_index(index: int, count: int) -> int:
    if not -count <= index < count:
        raise IndexError(f"record {index} out of range for {count} records")
    return index % count


@dataclass
class BuildReport:
    path: Path
    meta: FormatMeta
    seconds: float
    skipped: list[tuple[str, str]] = field(default_factory=list)
    # of ``seconds``, the fsync of the records before the marker: the disk's flush, not the
    # library's work (80% of a 32-image folder write on this VM's disk, docs/formats.md)
    sync_seconds: float = 0.0

    @property
    def size_ratio(self) -> float:
        return self.meta.bytes_on_disk / self.meta.source_bytes if self.meta.source_bytes else 0.0


# -- payloads ----------------------------------------------------------------------------------
def fixed_array(data: bytes, size: int = ARRAY_SIZE) -> np.ndarray:
    """Decode, resize the shorter side to ``size`` and centre-crop to ``size`` x ``size`` RGB."""
    from PIL import Image

    with Image.open(io.BytesIO(data)) as opened:
        image = opened.convert("RGB")
    w, h = image.size
    scale = size / min(w, h)
    nw, nh = max(size, round(w * scale)), max(size, round(h * scale))
    image = image.resize((nw, nh), Image.Resampling.BILINEAR)
    left, top = (nw - size) // 2, (nh - size) // 2
    image = image.crop((left, top, left + size, top + size))
    return np.ascontiguousarray(np.asarray(image, dtype=np.uint8))


class Entries(Protocol):
    """What a build consumes: a list of entries, or a manifest streamed from disk
    (``imgbench.datasets.manifest.ManifestFile``), iterated in order, twice."""

    def __len__(self) -> int: ...

    def __iter__(self) -> Iterator[ImageEntry]: ...


def class_names(entries: Iterable[ImageEntry]) -> tuple[str, ...]:
    return tuple(sorted({e.label for e in entries if e.label is not None}))


def payload_digest(payload: Payload) -> bytes:
    data = payload if isinstance(payload, bytes) else np.ascontiguousarray(payload).tobytes()
    return hashlib.sha256(data).digest()


Job = tuple[str, str, str, str, int, Packing | None]


def _load_job(job: Job) -> tuple[str, Payload | None, str]:
    """Read one source file (and decode it for array formats, or repack it); never raises for a
    bad file.

    Returns (path, payload, sha256 of the file) or (path, None, reason).
    """
    root, rel, expected_sha, stores, size, packing = job
    try:
        data = (Path(root) / rel).read_bytes()
    except OSError as exc:
        return rel, None, f"unreadable: {exc.strerror or exc}"
    digest = hashlib.sha256(data).hexdigest()
    if expected_sha and digest != expected_sha:
        return rel, None, "changed since the dataset was scanned (content hash differs)"
    if stores == "bytes" and (packing is None or not packing.reencodes):
        return rel, data, digest
    try:
        if stores == "bytes":
            return rel, repack_jpeg(data, cast(Packing, packing)), digest
        return rel, fixed_array(data, size), digest
    except Exception as exc:  # a file that no longer decodes
        return rel, None, f"cannot decode: {' '.join(str(exc).split())[:200]}"


# -- building ------------------------------------------------------------------------------------
def _shape(value: list[int] | None) -> tuple[int, int, int] | None:
    """The marker's array shape: three ints, or None for formats of encoded bytes."""
    if not value:
        return None
    height, width, channels = (int(v) for v in value)
    return height, width, channels


def format_files(path: Path) -> list[Path]:
    """Every file of a built format (imgbench's bookkeeping excluded): what cold reads evict."""
    files: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(path):
        dirnames[:] = sorted(d for d in dirnames if d != META_DIR)
        files.extend(Path(dirpath) / name for name in sorted(filenames))
    return files


def bytes_on_disk(path: Path) -> int:
    """Allocated bytes of the format's files (st_blocks), so sparse files count what they use."""
    return sum(f.stat().st_blocks * 512 for f in format_files(path))


def build_format(
    spec: FormatSpec,
    root: Path,
    entries: Entries,
    target: Path,
    *,
    workers: int | None = None,
    progress: bool | None = None,
    array_size: int = ARRAY_SIZE,
    packing: Packing | None = None,
) -> BuildReport:
    """Write ``entries`` (files under ``root``) as ``spec`` into ``target``, atomically;
    ``packing`` resizes, re-encodes and shards on the way (formats of encoded bytes only)."""
    start = time.perf_counter()
    target = Path(target)
    module = spec.load()  # before making the folder: a library that fails to import leaves nothing
    check_packing(spec, module, packing)
    with atomic_folder(target, fsync=True) as tmp:
        meta, synced_s = _write_all(
            spec, module, root, entries, tmp, workers, progress, array_size, packing
        )
    return BuildReport(
        target, meta, time.perf_counter() - start, list(meta.skipped), sync_seconds=synced_s
    )


def _write_plan(
    spec: FormatSpec, entries: Entries, array_size: int, packing: Packing | None
) -> tuple[tuple[str, ...], WritePlan]:
    """The class names (sorted) and what the writer is told ahead: one pass over ``entries``."""
    labels: set[str] = set()
    total = 0
    for e in entries:
        total += e.bytes
        if e.label is not None:
            labels.add(e.label)
    count = len(entries)
    plan = WritePlan(
        count_hint=count,
        stores=spec.stores,
        array_shape=(array_size, array_size, 3) if spec.stores == "array" else None,
        mean_record_bytes=total / count if count else 0.0,
        shards=packing.shards if packing else 1,
    )
    return tuple(sorted(labels)), plan


def _write_all(
    spec: FormatSpec,
    module: ModuleType,
    root: Path,
    entries: Entries,
    tmp: Path,
    workers: int | None,
    progress: bool | None,
    array_size: int,
    packing: Packing | None = None,
) -> tuple[FormatMeta, float]:
    """Stream ``entries`` through the format's writer into ``tmp``; the marker comes last.
    Returns the format's metadata and the seconds the records' fsync took.

    Memory is flat in the number of entries: one pass for the class names and sizes, then one
    that feeds a bounded pool; the entries in flight wait in a deque, in order, for their
    payloads; the keys file and the content hash are written as records go by.
    """
    from tqdm import tqdm

    from imgbench.datasets.parallel import cpu_count, imap

    classes, plan = _write_plan(spec, entries, array_size, packing)
    class_index = {name: i for i, name in enumerate(classes)}
    count = len(entries)
    in_flight: collections.deque[ImageEntry] = collections.deque()
    skipped: list[tuple[str, str]] = []
    content = hashlib.sha256()
    totals = {"count": 0, "source_bytes": 0}
    reencodes = packing is not None and packing.reencodes
    n_workers = (workers or cpu_count()) if spec.parallel_write or reencodes else 1

    def jobs() -> Iterator[Job]:
        for e in entries:
            in_flight.append(e)  # before the job leaves: results come back in this order
            yield (str(root), e.path, e.sha256, spec.stores, array_size, packing)

    (tmp / META_DIR).mkdir()
    keys_file = (tmp / META_DIR / KEYS).open("w", encoding="utf-8")

    def records() -> Generator[Record, None, None]:
        shown = sys.stderr.isatty() if progress is None else progress
        bar = tqdm(total=count, desc=f"write {spec.name}", unit="img", disable=not shown)
        with bar:
            for rel, payload, info in imap(_load_job, jobs(), workers=n_workers, chunksize=4):
                bar.update()
                entry = in_flight.popleft()
                assert entry.path == rel, (entry.path, rel)
                if payload is None:
                    skipped.append((rel, info))
                    continue
                label = class_index[entry.label] if entry.label is not None else -1
                index = totals["count"]
                content.update(payload_digest(payload))
                content.update(label.to_bytes(8, "little", signed=True))
                keys_file.write(f"{rel}\t{label}\n")
                totals["count"] += 1
                totals["source_bytes"] += entry.bytes
                yield Record(index, rel, label, payload, "jpeg" if reencodes else entry.codec)

    stream = records()
    with keys_file:
        try:
            module.write(tmp, stream, plan)
        finally:
            stream.close()  # stops the decode pool at once if the writer gave up
    if totals["count"] == 0:
        first = f" (e.g. {skipped[0][0]}: {skipped[0][1]})" if skipped else ""
        raise FormatError(f"{spec.name}: no record could be written{first}")
    sync_start = time.perf_counter()
    fsync_tree(tmp)  # the records are on disk before a marker can say they are complete
    synced_s = time.perf_counter() - sync_start
    meta = FormatMeta(
        name=spec.name,
        count=totals["count"],
        classes=classes,
        stores=spec.stores,
        array_shape=plan.array_shape,
        payload_sha256=content.hexdigest(),
        source_bytes=totals["source_bytes"],
        bytes_on_disk=bytes_on_disk(tmp),
        skipped=tuple(skipped),
        packing=packing.as_pairs() if packing else (),
    )
    _write_marker(tmp / META_DIR / MARKER, meta)
    return meta, synced_s


def check_packing(spec: FormatSpec, module: ModuleType, packing: Packing | None) -> None:
    """Packing needs a format of encoded bytes; shards need a writer that splits
    (``SHARDS = True`` in its module). FormatError, before anything is written, otherwise."""
    if packing is None or (not packing.reencodes and packing.shards == 1):
        return
    if spec.stores != "bytes":
        raise FormatError(
            f"{spec.name} stores decoded pixels: --resize-short, --quality and --shards are for "
            "formats that hold the encoded bytes"
        )
    if packing.shards > 1 and not getattr(module, "SHARDS", False):
        raise FormatError(f"{spec.name} cannot be written in shards (--shards)")


def _write_marker(path: Path, meta: FormatMeta) -> None:
    doc = {
        "imgbench_format": meta.name,
        "marker_version": MARKER_VERSION,
        "count": meta.count,
        "classes": list(meta.classes),
        "stores": meta.stores,
        "array_shape": list(meta.array_shape) if meta.array_shape else None,
        "payload_sha256": meta.payload_sha256,
        "source_bytes": meta.source_bytes,
        "bytes_on_disk": meta.bytes_on_disk,
        "skipped": [list(s) for s in meta.skipped],
        "packing": dict(meta.packing),
        "created_utc": datetime.now(UTC).isoformat(),
    }
    with path.open("w", encoding="utf-8") as handle:
        json.dump(doc, handle, indent=1)
        handle.flush()
        os.fsync(handle.fileno())


def read_meta(path: Path) -> FormatMeta:
    """The completion marker of a built format; FormatError when it is missing or unreadable."""
    marker = Path(path) / META_DIR / MARKER
    if not marker.is_file():
        raise FormatError(f"{path}: not a complete imgbench format (no {META_DIR}/{MARKER})")
    return parse_meta(marker.read_text(encoding="utf-8"), str(marker))


def parse_meta(text: str, where: str) -> FormatMeta:
    """A completion marker's text (from a folder, or an object store) as FormatMeta."""
    try:
        doc = json.loads(text)
        return FormatMeta(
            name=doc["imgbench_format"],
            count=int(doc["count"]),
            classes=tuple(doc["classes"]),
            stores=doc["stores"],
            array_shape=_shape(doc["array_shape"]),
            payload_sha256=doc["payload_sha256"],
            source_bytes=int(doc["source_bytes"]),
            bytes_on_disk=int(doc["bytes_on_disk"]),
            skipped=tuple((p, r) for p, r in doc.get("skipped", [])),
            packing=tuple((str(k), int(v)) for k, v in (doc.get("packing") or {}).items()),
        )
    except (ValueError, KeyError, TypeError) as exc:
        raise FormatError(f"{where}: unreadable completion marker ({exc})") from None


def open_format(spec: FormatSpec, path: Path) -> BaseReader:
    """Open a complete format folder written by :func:`build_format` for ``spec``."""
    meta = read_meta(path)
    if meta.name != spec.name:
        raise FormatError(f"{path}: holds format {meta.name!r}, not {spec.name!r}")
    reader = spec.load().Reader(Path(path), meta)
    if len(reader) != meta.count:
        reader.close()
        raise FormatError(f"{path}: {len(reader)} records, the marker says {meta.count}")
    return reader


def read_keys(path: Path) -> list[tuple[str, int]]:
    """(source path, label) of every record, in record order."""
    return parse_keys((Path(path) / META_DIR / KEYS).read_text(encoding="utf-8"))


def parse_keys(text: str) -> list[tuple[str, int]]:
    """The key list's text (``path<TAB>label`` lines) as (source path, label) pairs."""
    rows = []
    for line in text.split("\n"):
        if not line:
            continue
        rel, label = line.rsplit("\t", 1)
        rows.append((rel, int(label)))
    return rows


def as_bytes(payload: Any) -> bytes:
    """Normalise a library's byte-like return value to ``bytes``."""
    if isinstance(payload, bytes):
        return payload
    if isinstance(payload, np.ndarray):
        return payload.tobytes()
    return bytes(payload)


@contextlib.contextmanager
def quiet_warnings(*categories: type[Warning]) -> Iterator[None]:
    import warnings

    with warnings.catch_warnings():
        for category in categories or (Warning,):
            warnings.simplefilter("ignore", category)
        yield


def shard_streams(records: Iterable[Record], per_shard: int) -> Iterator[Iterator[Record]]:
    """The records as consecutive runs of ``per_shard``, each consumed before the next starts
    (streamed: no shard is held in memory); no empty run at the end."""
    stream = iter(records)
    while (first := next(stream, None)) is not None:
        yield itertools.chain([first], itertools.islice(stream, per_shard - 1))
