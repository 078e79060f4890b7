"""Scan any folder of images into a Manifest: recursive, ImageFolder or flat, never crashing.

Each file is identified by content (not extension), its header checked against a pixel limit
before decoding (decompression bombs), then fully decoded once so that truncated files are
caught here rather than in the middle of a timed benchmark. Results are cached per root.
"""

from __future__ import annotations

import hashlib
import io
import logging
import os
import warnings
from pathlib import Path

from PIL import Image

from imgbench.errors import one_line

from .manifest import BadFile, DatasetError, ImageEntry, Manifest, _read
from .parallel import cpu_count, imap

log = logging.getLogger(__name__)

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
    if not data:
        return BadFile(rel, "zero bytes")
    codec = sniff(data[:16])
    if codec is None:
        other = _other_image_format(data[:16])
        if other:
            return BadFile(
                rel, f"unsupported format {other} (imgbench uses jpeg, png, webp, bmp, tiff)"
            )
        return BadFile(rel, "not an image (unknown format)")
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
    mode = im.mode
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            im.load()
    except Exception as exc:
        msg = one_line(exc, limit=200)
        if "truncated" in msg.lower() or isinstance(exc, EOFError):
            return BadFile(rel, f"truncated {name} ({msg})")
        return BadFile(rel, f"cannot decode {name} ({mode}): {msg}")
    if mode not in ("RGB", "L"):
        try:  # readers hand RGB to the pipeline; an image Pillow cannot convert is unusable
            im.convert("RGB")
        except Exception as exc:
            return BadFile(
                rel, f"unsupported mode {mode}: cannot convert to RGB ({one_line(exc, limit=200)})"
            )
    return ImageEntry(
        path=rel,
        bytes=len(data),
        codec=codec,
        width=w,
        height=h,
        mode=mode,
        label=_label(rel),
        sha256=hashlib.sha256(data).hexdigest(),
    )


def _inspect_job(job: tuple[str, str, int]) -> ImageEntry | BadFile:
    root, rel, limit = job
    return inspect_file(Path(root), rel, max_pixels=limit)


def list_files(root: Path) -> tuple[list[tuple[str, os.stat_result]], int]:
    """Candidate image files (by extension or magic bytes) under root, and the ignored count.

    Hidden files and folders (starting with '.') are skipped: caches, labels and manifests live
    there. Non-image files without an image extension (labels.csv, README) are ignored silently.
    """
    found: list[tuple[str, os.stat_result]] = []
    ignored = 0
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for fn in sorted(filenames):
            if fn.startswith("."):
                continue
            full = Path(dirpath) / fn
            try:
                st = full.stat()
            except OSError:
                continue
            if not full.is_file():
                continue
            rel = full.relative_to(root).as_posix()
            if Path(fn).suffix.lower() not in IMAGE_EXTENSIONS:
                try:
                    with open(full, "rb") as f:
                        head = f.read(16)
                except OSError:
                    head = b""
                if sniff(head) is None and _other_image_format(head) is None:
                    ignored += 1
                    continue
            found.append((rel, st))
    return found, ignored


def _load_cache(root: Path, limit: int) -> dict[str, tuple[tuple[int, int], ImageEntry | BadFile]]:
    path = root / CACHE_NAME
    if not path.is_file():
        return {}
    try:
        m, extra = _read(path)
    except DatasetError:
        return {}
    sizes, mtimes, limits = (
        extra.get("size", {}),
        extra.get("mtime_ns", {}),
        extra.get("max_pixels", {}),
    )
    out: dict[str, tuple[tuple[int, int], ImageEntry | BadFile]] = {}
    items: list[ImageEntry | BadFile] = [*m.entries, *m.bad]
    for item in items:
        if limits.get(item.path) == limit and item.path in sizes:
            out[item.path] = ((sizes[item.path], mtimes[item.path]), item)
    return out


def _save_cache(
    root: Path, manifest: Manifest, keys: dict[str, tuple[int, int]], limit: int
) -> None:
    # the order Manifest._table writes rows in
    items: list[ImageEntry | BadFile] = [*manifest.entries, *manifest.bad]
    extra = {
        "size": [keys[i.path][0] for i in items],
        "mtime_ns": [keys[i.path][1] for i in items],
        "max_pixels": [limit] * len(items),
    }
    try:
        manifest.to_parquet(root / CACHE_NAME, _extra=extra)
    except OSError as exc:  # read-only dataset: fine, just slower next time
        log.info("not caching the manifest in %s: %s", root, exc)


def scan(
    root: Path,
    *,
    workers: int | None = None,
    progress: bool = False,
    max_pixels: int | None = None,
    use_cache: bool = True,
) -> Manifest:
    """Scan ``root`` recursively into a Manifest (see module docstring).

    Raises DatasetError for a missing path, a non-directory, an empty folder or a folder without
    a usable image; a bad file only becomes a BadFile.
    """
    root = Path(root).expanduser()
    if not root.exists():
        raise DatasetError(f"dataset path does not exist: {root}")
    if not root.is_dir():
        raise DatasetError(f"dataset path is not a directory: {root}")
    root = root.resolve()
    limit = max_pixels_default() if max_pixels is None else int(max_pixels)
    files, ignored = list_files(root)
    if not files:
        if ignored == 0:
            raise DatasetError(f"dataset folder is empty: {root}")
        raise DatasetError(f"no images in {root} ({ignored} files, none of them an image)")

    cache = _load_cache(root, limit) if use_cache else {}
    keys = {rel: (st.st_size, st.st_mtime_ns) for rel, st in files}
    results: dict[str, ImageEntry | BadFile] = {}
    todo = []
    for rel, key in keys.items():
        hit = cache.get(rel)
        if hit is not None and hit[0] == key:
            results[rel] = hit[1]
        else:
            todo.append(rel)

    if todo:
        n_workers = workers if workers is not None else cpu_count()
        n_workers = max(1, min(n_workers, len(todo) // 32))  # a pool is not worth it for a few
        jobs = ((str(root), rel, limit) for rel in todo)
        from tqdm import tqdm

        bar = tqdm(total=len(todo), desc=f"scan {root.name}", unit="img", disable=not progress)
        with bar:
            for item in imap(_inspect_job, jobs, workers=n_workers, chunksize=16):
                results[item.path] = item
                bar.update()

    entries = [r for r in results.values() if isinstance(r, ImageEntry)]
    bad = [r for r in results.values() if isinstance(r, BadFile)]
    manifest = Manifest(root, entries, bad)
    if use_cache and (todo or len(cache) != len(results)):
        _save_cache(root, manifest, keys, limit)
    if not entries:
        raise DatasetError(
            f"no usable images in {root} ({len(bad)} bad files, e.g. {bad[0].path}: {bad[0].reason})"
        )
    return manifest
