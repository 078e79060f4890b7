"""`imgbench dataset convert`: any folder of images into any registered storage format.

No second copy of anything: the scanner (``imgbench.datasets.scan``) finds the files that cannot
be used (unreadable, truncated, undecodable, bombs, unsupported) with their reasons, on every
core; the format's own atomic build (``imgbench.formats.base.build_format``) streams the rest into
the store, skipping files that vanished or changed since, and renames the store into place only
once its completion marker is written, so an interrupted conversion leaves nothing that opens.
Memory is flat in the number of images: the manifest is streamed to disk by the scan and read
back, row group by row group, by the build.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from imgbench.datasets.heap import pin_mmap_threshold
from imgbench.datasets.manifest import BadFile, arrow_system_pool
from imgbench.datasets.scan import scan_to_file
from imgbench.formats.base import FormatSpec, Packing, build_format


@dataclass
class ConvertReport:
    """What a conversion wrote, what it left out and why, and what it cost."""

    target: Path
    format: str
    records: int
    source_bytes: int
    bytes_on_disk: int
    scan_s: float  # identify and decode-check every source file (every core)
    write_s: float  # read, hash and write every record (the format's writer)
    bad: list[BadFile] = field(default_factory=list)  # left out by the scan
    skipped: list[tuple[str, str]] = field(default_factory=list)  # vanished or changed since

    @property
    def left_out(self) -> list[tuple[str, str]]:
        return [(b.path, b.reason) for b in self.bad] + self.skipped

    @property
    def images_per_s(self) -> float:
        seconds = self.scan_s + self.write_s
        return self.records / seconds if seconds else 0.0

    @property
    def write_images_per_s(self) -> float:
        return self.records / self.write_s if self.write_s else 0.0


def default_target(src: Path, spec: FormatSpec) -> Path:
    """``SRC.FORMAT`` beside the source folder."""
    src = Path(src).expanduser().resolve()
    return src.parent / f"{src.name}.{spec.name}"


def convert(
    src: Path,
    spec: FormatSpec,
    target: Path,
    *,
    workers: int | None = None,
    progress: bool | None = None,
    on_bad: Callable[[str, str], None] | None = None,
    packing: Packing | None = None,
) -> ConvertReport:
    """Convert the images under ``src`` into ``spec`` at ``target`` (replaced only when complete);
    ``packing`` resizes, re-encodes and shards on the way (im2rec's ``--resize``, ``--quality``,
    ``--chunks``) and the store's marker records it.

    ``on_bad(path, reason)`` hears of every file left out as soon as the scan knows it.
    Raises DatasetError when ``src`` holds no usable image, FormatError when nothing was written.
    """
    if progress is None:  # tqdm bars (with ETA) where someone watches
        progress = sys.stderr.isatty()
    pin_mmap_threshold()  # payloads of 100-200 KB fragmented the heap: RSS grew with N (heap.py)
    start = time.perf_counter()
    bad: list[BadFile] = []  # grows with the bad files only; the manifest stays on disk

    def heard(item: BadFile) -> None:
        bad.append(item)
        if on_bad is not None:
            on_bad(item.path, item.reason)

    with (
        arrow_system_pool(),  # pyarrow's mimalloc kept freed pages: RSS grew with N (manifest.py)
        scan_to_file(Path(src), workers=workers, progress=progress, on_bad=heard) as manifest,
    ):
        scan_s = time.perf_counter() - start
        report = build_format(
            spec,
            manifest.root,
            manifest,
            target,
            workers=workers,
            progress=progress,
            packing=packing,
        )
    if on_bad is not None:
        for path, reason in report.skipped:
            on_bad(path, reason)
    return ConvertReport(
        target=report.path,
        format=spec.name,
        records=report.meta.count,
        source_bytes=report.meta.source_bytes,
        bytes_on_disk=report.meta.bytes_on_disk,
        scan_s=scan_s,
        write_s=report.seconds,
        bad=bad,
        skipped=list(report.skipped),
    )
