"""Scan any folder of images into a Manifest: recursive, ImageFolder or flat, never crashing.

Each file is identified by content (not extension), its header checked against a pixel limit
before decoding (decompression bombs), then fully decoded once so that truncated files are
caught here rather than in the middle of a timed benchmark. Results are cached per root.

Everything streams in path order (listing, cache lookup, decode check, manifest written), so a
scan's memory does not grow with the number of files (``scan_to_file``); ``scan`` then loads the
manifest for the benchmarks, which hold their (small) datasets in memory.
"""

from __future__ import annotations

import contextlib
import hashlib
import heapq
import io
import logging
import os
import shutil
import tempfile
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pyarrow as pa
import pyarrow.parquet as pq
from PIL import Image

from imgbench.atomic import atomic_file
from imgbench.errors import one_line
from imgbench.iters import batched

from .manifest import (
    BadFile,
    DatasetError,
    ImageEntry,
    Manifest,
    ManifestFile,
    ManifestWriter,
    _item,
    arrow_system_pool,
    iter_rows,
)
from .pairs import detect as detect_pairs
from .pairs import mask_folders
from .parallel import WorkerPool, cpu_count

log = logging.getLogger(__name__)
T = TypeVar("T")

CACHE_NAME = ".imgbench-manifest.parquet"

# Pillow refuses images above 2 * Image.MAX_IMAGE_PIXELS; use the same line by default.
DEFAULT_MAX_PIXELS = 178_956_970

IMAGE_EXTENSIONS = frozenset(
    [
        ".jpg",
        ".jpeg",
        ".jpe",
        ".jfif",
        ".png",
        ".webp",
        ".bmp",
        ".dib",
        ".tif",
        ".tiff",
        ".gif",
        ".jp2",
        ".j2k",
        ".heic",
        ".heif",
        ".avif",
        ".ppm",
        ".pgm",
        ".pbm",
        ".pnm",
        ".ico",
        ".tga",
        ".psd",
        ".jxl",
        ".qoi",
    ]
)

_PIL_FORMAT = {"jpeg": "JPEG", "png": "PNG", "webp": "WEBP", "bmp": "BMP", "tiff": "TIFF"}


def max_pixels_default() -> int:
    """Pixel limit for one image; env ``IMGBENCH_MAX_PIXELS`` overrides Pillow's 178.9 MP."""
    env = os.environ.get("IMGBENCH_MAX_PIXELS")
    return int(float(env)) if env else DEFAULT_MAX_PIXELS


def sniff(head: bytes) -> str | None:
    """Codec from the first bytes of a file, or None when it is not one imgbench benches."""
    if head.startswith(b"\xff\xd8\xff"):
        return "jpeg"
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "png"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "webp"
    if head.startswith(b"BM"):
        return "bmp"
    if head[:4] in (b"II*\x00", b"MM\x00*"):
        return "tiff"
    return None


def _other_image_format(head: bytes) -> str | None:
    """Formats we recognise but do not bench (so the reason can name them)."""
    signatures = {
        b"GIF87a": "GIF",
        b"GIF89a": "GIF",
        b"\x00\x00\x00\x0cjP  ": "JPEG 2000",
        b"\xff\x4f\xff\x51": "JPEG 2000",
        b"\xff\x0a": "JPEG XL",
        b"\x00\x00\x00\x0cJXL ": "JPEG XL",
        b"8BPS": "PSD",
        b"qoif": "QOI",
    }
    for sig, name in signatures.items():
        if head.startswith(sig):
            return name
    if head[4:8] == b"ftyp":
        brand = head[8:12]
        if brand in (b"avif", b"avis"):
            return "AVIF"
        if brand in (b"heic", b"heix", b"mif1", b"msf1", b"hevc"):
            return "HEIF"
    if head[:2] in (b"P1", b"P2", b"P3", b"P4", b"P5", b"P6"):
        return "PNM"
    return None


def _label(rel: str) -> str | None:
    parts = rel.split("/")
    return parts[0] if len(parts) > 1 else None


def _open_header(data: bytes, codec: str) -> Image.Image:
    """Open without Pillow's own bomb check, so that our limit (and message) applies.

    Image.open raises DecompressionBombError before telling us the size; the format plugin's
    constructor only parses the header.
    """
    Image.init()
    factory = Image.OPEN.get(_PIL_FORMAT[codec], (None, None))[0]
    if factory is None:  # pragma: no cover - Pillow built without the plugin
        return Image.open(io.BytesIO(data), formats=[_PIL_FORMAT[codec]])
    return factory(io.BytesIO(data), "")  # the filename Image.open passes for a stream


def inspect_file(root: Path, rel: str, *, max_pixels: int | None = None) -> ImageEntry | BadFile:
    """Identify, check and fully decode one file; never raises for a bad file."""
    limit = max_pixels_default() if max_pixels is None else max_pixels
    try:
        data = (root / rel).read_bytes()
    except OSError as exc:
        return BadFile(rel, f"unreadable: {exc.strerror or exc}")
    codec = _identify(rel, data)
    if isinstance(codec, BadFile):
        return codec
    im = _checked_header(rel, data, codec, limit)
    if isinstance(im, BadFile):
        return im
    if problem := _decode_problem(im, codec.upper()):
        return BadFile(rel, problem)
    w, h = im.size
    return ImageEntry(
        path=rel,
        bytes=len(data),
        codec=codec,
        width=w,
        height=h,
        mode=im.mode,
        label=_label(rel),
        sha256=hashlib.sha256(data).hexdigest(),
    )


def _identify(rel: str, data: bytes) -> str | BadFile:
    """The file's codec by its magic bytes, or why it is not an image imgbench uses."""
    if not data:
        return BadFile(rel, "zero bytes")
    codec = sniff(data[:16])
    if codec is not None:
        return codec
    other = _other_image_format(data[:16])
    if other:
        return BadFile(
            rel, f"unsupported format {other} (imgbench uses jpeg, png, webp, bmp, tiff)"
        )
    return BadFile(rel, "not an image (unknown format)")


def _checked_header(rel: str, data: bytes, codec: str, limit: int) -> Image.Image | BadFile:
    """The opened (not decoded) image, or a corrupt header or a size over ``limit`` pixels."""
    name = codec.upper()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            im = _open_header(data, codec)
    except Exception as exc:
        return BadFile(rel, f"corrupt {name} header: {one_line(exc, limit=200)}")
    w, h = im.size
    if w <= 0 or h <= 0:
        return BadFile(rel, f"corrupt {name} header: size {w}x{h}")
    if w * h > limit:
        return BadFile(
            rel,
            f"decompression bomb: {w}x{h} = {w * h / 1e6:,.0f} MP > limit {limit / 1e6:,.1f} MP "
            "(set IMGBENCH_MAX_PIXELS to allow it)",
        )
    return im


def _decode_problem(im: Image.Image, name: str) -> str | None:
    """Why the whole image cannot be decoded, or converted to the RGB readers hand on."""
    mode = im.mode
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            im.load()
    except Exception as exc:
        msg = one_line(exc, limit=200)
        if "truncated" in msg.lower() or isinstance(exc, EOFError):
            return f"truncated {name} ({msg})"
        return f"cannot decode {name} ({mode}): {msg}"
    if mode not in ("RGB", "L"):
        try:  # readers hand RGB to the pipeline; an image Pillow cannot convert is unusable
            im.convert("RGB")
        except Exception as exc:
            return f"unsupported mode {mode}: cannot convert to RGB ({one_line(exc, limit=200)})"
    return None


def _inspect_job(job: tuple[str, str, int]) -> ImageEntry | BadFile:
    root, rel, limit = job
    return inspect_file(Path(root), rel, max_pixels=limit)


def _is_candidate(full: Path, name: str) -> bool:
    """An image by extension, or a file without one whose magic bytes say image."""
    if Path(name).suffix.lower() in IMAGE_EXTENSIONS:
        return True
    try:
        with open(full, "rb") as f:
            head = f.read(16)
    except OSError:
        head = b""
    return sniff(head) is not None or _other_image_format(head) is not None


def _sorted_names(folder: Path) -> list[str]:
    """A folder's visible entries, folders with a trailing "/", in the order of their full
    paths; none when the folder cannot be listed."""
    names = []
    try:
        with os.scandir(folder) as listing:
            for item in listing:
                if item.name.startswith("."):
                    continue
                try:
                    is_dir = item.is_dir(follow_symlinks=False)  # as os.walk
                except OSError:
                    continue
                names.append(item.name + "/" if is_dir else item.name)
    except OSError:
        return []
    return sorted(names)


def iter_files(
    root: Path, counts: dict[str, int] | None = None
) -> Iterator[tuple[str, os.stat_result]]:
    """Candidate image files under root, in the manifest's order (sorted POSIX paths), streamed.

    One folder's names are sorted at a time (a folder's entries sort by ``name`` for files and
    ``name + "/"`` for folders, which is the order of the full paths), so memory is bounded by
    the largest folder, not the dataset. Hidden files and folders (starting with '.') are
    skipped: caches, labels and manifests live there. Non-image files without an image extension
    (labels.csv, README) are counted in ``counts["ignored"]``.
    """
    if counts is None:
        counts = {}
    counts.setdefault("ignored", 0)
    masks = mask_folders(Path(root))  # a segmentation layout's masks are never images to time

    def walk(folder: Path, prefix: str) -> Iterator[tuple[str, os.stat_result]]:
        for key in _sorted_names(folder):
            if key.endswith("/"):
                if prefix or key[:-1] not in masks:
                    yield from walk(folder / key[:-1], prefix + key)
                continue
            full = folder / key
            try:
                st = full.stat()
            except OSError:
                continue
            if not full.is_file():
                continue
            if not _is_candidate(full, key):
                counts["ignored"] += 1
                continue
            yield prefix + key, st

    yield from walk(Path(root), "")


def list_files(root: Path) -> tuple[list[tuple[str, os.stat_result]], int]:
    """Every candidate image file under root (see :func:`iter_files`) and the ignored count."""
    counts: dict[str, int] = {}
    found = list(iter_files(root, counts))
    return found, counts["ignored"]


class _Cache:
    """The previous scan's manifest, read in step with the sorted listing (a merge join).

    Usable entries and bad files are each sorted by path in the file (whether interleaved, as
    streamed manifests are, or one after the other, as ``Manifest.to_parquet`` writes them), so
    two cursors merged by path give one sorted stream; a file out of order ends the cache.
    """

    def __init__(self, path: Path, limit: int) -> None:
        self._rows: Iterator[dict[str, Any]] = iter(())
        try:
            with pq.ParquetFile(path) as handle:
                names = handle.schema_arrow.names
            if all(c in names for c in CACHE_COLUMNS):
                self._rows = heapq.merge(
                    (r for r in iter_rows(path) if r["reason"] is None),
                    (r for r in iter_rows(path) if r["reason"] is not None),
                    key=lambda r: r["path"],
                )
        except (OSError, pa.ArrowException):
            pass
        self._limit = limit
        self.stale = 0
        self._head: dict[str, Any] | None = None
        self._last = ""
        self._advance()

    def _advance(self) -> None:
        try:
            row = next(self._rows)
        except (StopIteration, OSError, pa.ArrowException):
            row = None
        if row is not None and row["path"] < self._last:
            row = None  # not sorted: not a manifest this code wrote; scan everything
        if row is None:
            self._rows = iter(())
        else:
            self._last = row["path"]
        self._head = row

    def get(self, rel: str, key: tuple[int, int]) -> ImageEntry | BadFile | None:
        """The cached result for ``rel`` when its size, mtime and pixel limit still match."""
        while self._head is not None and self._head["path"] < rel:
            self.stale += 1  # a file that is gone
            self._advance()
        row = self._head
        if row is None or row["path"] != rel:
            return None
        self._advance()
        if (row["size"], row["mtime_ns"], row["max_pixels"]) != (*key, self._limit):
            return None
        return _item(row)

    def exhausted(self) -> bool:
        """No row left over: every cached file was listed again (call after the last ``get``)."""
        return self._head is None


CACHE_COLUMNS = ("size", "mtime_ns", "max_pixels")
BATCH = 1024  # files looked up in the cache, then decode-checked, per step


def scan_to_file(
    root: Path,
    *,
    workers: int | None = None,
    progress: bool = False,
    max_pixels: int | None = None,
    use_cache: bool = True,
    on_bad: Callable[[BadFile], None] | None = None,
) -> ManifestFile:
    """Scan ``root`` recursively into a manifest that stays on disk (see module docstring).

    Memory is flat in the number of files: the listing, the cache lookup (a merge join with the
    previous manifest), the decode check (a bounded pool) and the manifest written (row group by
    row group, to a temporary file, then copied to ``root/.imgbench-manifest.parquet`` atomically
    when it differs from the cache there) all stream in path order. ``on_bad`` hears of every
    excluded file as soon as it is known. Raises DatasetError for a missing path, a
    non-directory, an empty folder or a folder without a usable image.
    """
    with arrow_system_pool():
        return _scan_to_file(root, workers, progress, max_pixels, use_cache, on_bad)


def _scan_to_file(
    root: Path,
    workers: int | None,
    progress: bool,
    max_pixels: int | None,
    use_cache: bool,
    on_bad: Callable[[BadFile], None] | None,
) -> ManifestFile:
    root = _checked_root(root)
    limit = max_pixels_default() if max_pixels is None else int(max_pixels)
    cache_path = root / CACHE_NAME
    cache = _Cache(cache_path, limit) if use_cache and cache_path.is_file() else None
    fd, name = tempfile.mkstemp(prefix="imgbench-manifest-", suffix=".parquet")
    os.close(fd)
    out = Path(name)  # not in root: a rescan that changes nothing leaves root untouched
    writer = ManifestWriter(out, root, CACHE_COLUMNS)
    counts: dict[str, int] = {}
    n_workers = workers if workers is not None else cpu_count()
    try:
        listed, checked = _inspect_all(
            root, writer, cache, limit, n_workers, progress, counts, on_bad
        )
        writer.close()
    except BaseException:
        writer.abort()
        Path(out).unlink(missing_ok=True)
        raise
    if listed == 0:
        Path(out).unlink(missing_ok=True)
        ignored = counts.get("ignored", 0)
        if ignored == 0:
            raise DatasetError(f"dataset folder is empty: {root}")
        raise DatasetError(f"no images in {root} ({ignored} files, none of them an image)")
    changed = cache is None or checked > 0 or cache.stale > 0 or not cache.exhausted()
    if use_cache and changed:
        try:
            with atomic_file(cache_path) as handle, out.open("rb") as source:
                shutil.copyfileobj(source, handle)
        except OSError as exc:  # read-only dataset: fine, just slower next time
            log.info("not caching the manifest in %s: %s", root, exc)
    manifest = ManifestFile(writer, temporary=True)
    if writer.count == 0:
        bad = writer.first_bad
        assert bad is not None
        manifest.close()
        raise DatasetError(
            f"no usable images in {root} ({writer.n_bad} bad files, e.g. {bad.path}: {bad.reason})"
        )
    return manifest


def _checked_root(root: Path) -> Path:
    """The dataset folder, resolved; DatasetError when it is missing, not a folder, or a
    segmentation layout whose files do not pair."""
    root = Path(root).expanduser()
    if not root.exists():
        raise DatasetError(f"dataset path does not exist: {root}")
    if not root.is_dir():
        raise DatasetError(f"dataset path is not a directory: {root}")
    root = root.resolve()
    detect_pairs(root)  # a segmentation layout whose files do not pair is an error naming them
    return root


def _inspect_all(
    root: Path,
    writer: ManifestWriter,
    cache: _Cache | None,
    limit: int,
    n_workers: int,
    progress: bool,
    counts: dict[str, int],
    on_bad: Callable[[BadFile], None] | None,
) -> tuple[int, int]:
    """Every candidate file into ``writer``, in manifest order: from the cache where its size
    and mtime match, inspected otherwise (in a pool once a batch has enough to do). Returns the
    files listed and those inspected."""
    from tqdm import tqdm

    total = sum(1 for _ in iter_files(root)) if progress else None  # the bar's ETA
    listed = checked = 0
    with contextlib.ExitStack() as stack:
        bar = stack.enter_context(
            tqdm(total=total, desc=f"scan {root.name}", unit="img", disable=not progress)
        )
        pool: WorkerPool | None = None
        for batch in batched(iter_files(root, counts), BATCH):
            listed += len(batch)
            keys = [(st.st_size, st.st_mtime_ns) for _, st in batch]
            items: list[ImageEntry | BadFile | None] = [
                cache.get(rel, key) if cache is not None else None
                for (rel, _), key in zip(batch, keys, strict=True)
            ]
            todo = [i for i, item in enumerate(items) if item is None]
            checked += len(todo)
            if pool is None and n_workers > 1 and len(todo) >= 64:
                pool = stack.enter_context(WorkerPool(n_workers))
            jobs = ((str(root), batch[i][0], limit) for i in todo)
            if pool is not None:
                results = pool.imap(_inspect_job, jobs, chunksize=16)
            else:
                results = map(_inspect_job, jobs)
            for i, result in zip(todo, results, strict=True):
                items[i] = result
            for item, key in zip(items, keys, strict=True):
                assert item is not None
                writer.add(item, (*key, limit))
                if isinstance(item, BadFile) and on_bad is not None:
                    on_bad(item)
            bar.update(len(batch))
    return listed, checked


def scan(
    root: Path,
    *,
    workers: int | None = None,
    progress: bool = False,
    max_pixels: int | None = None,
    use_cache: bool = True,
) -> Manifest:
    """Scan ``root`` recursively into a Manifest held in memory (see module docstring).

    :func:`scan_to_file` does the work; this loads its result. Raises DatasetError for a missing
    path, a non-directory, an empty folder or a folder without a usable image; a bad file only
    becomes a BadFile.
    """
    with (
        arrow_system_pool(),
        scan_to_file(
            root, workers=workers, progress=progress, max_pixels=max_pixels, use_cache=use_cache
        ) as result,
    ):
        return result.load()
