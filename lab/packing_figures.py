"""Does packing like im2rec pay off? The DataLoader over converted stores vs the unconverted ones.

Converts a dataset (default: the synthetic ImageNet-like set, 512 JPEGs) with ``imgbench dataset
convert`` into RecordIO, tar, LMDB and Parquet twice: as is (the original JPEG bytes, one file)
and packed the way seed 004 packs ImageNet (``--resize-short 256 --quality 90 --shards 8``). Then
runs imgbench's default loader pipeline (``SamplePipeline``: the store's reader, OpenCV decode,
albumentations train recipe, the default collate) in ``torch.utils.data.DataLoader`` over the
folder of original files and over each store, cold: every file of the source is evicted
(``posix_fadvise(DONTNEED)``) before each epoch, and the workers are not persistent (a worker that
keeps an LMDB mapped would keep its pages cached). Each epoch is the whole set, shuffled (the
training default) or in order (how im2rec's ``ImageRecordIter`` reads); the first epoch is a
warm-up, images/s is the median of the others. On the real disk, and on the emulated HDD
(``imgbench.disks``, root only: the stores copied onto a throttled loop device, this process
and its workers throttled) where it can be set up.

    .venv/bin/python lab/packing_figures.py [--disks none,hdd] [--orders shuffled,sequential]

Prints one Markdown table per disk and order: images/s, over the folder's, the store's MB and
the largest fraction of its pages still cached right after an eviction. A timing job: run it on
a quiet machine, alone; figures taken beside other jobs are noisy.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FORMATS = ("recordio", "tar", "lmdb", "parquet")
PACKING = ("--resize-short", "256", "--quality", "90", "--shards", "8")
IMAGE_SUFFIXES = {".jpg", ".jpeg", ".png", ".webp"}


@dataclass(frozen=True)
class Store:
    label: str  # "folder", "tar", "tar packed", ...
    format: str  # imgbench.loaders.pipeline.FILES or a format name
    path: Path

    def files(self) -> list[Path]:
        """What a cold epoch evicts: the images, or every file of the store."""
        if self.format == "files":
            return image_files(self.path)
        from imgbench.formats.base import format_files

        return format_files(self.path)


@dataclass(frozen=True)
class Figure:
    images_per_s: float
    resident_after_evict: float
    megabytes: float


def image_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.suffix.lower() in IMAGE_SUFFIXES)


def convert_all(source: Path, out: Path, formats: tuple[str, ...]) -> list[Store]:
    """The folder and each format as is and packed, converted once (kept between runs)."""
    imgbench = Path(sys.executable).with_name("imgbench")
    stores = [Store("folder", "files", source)]
    for name in formats:
        for packed in (False, True):
            target = out / f"{name}-packed" if packed else out / name
            if not (target / "_imgbench" / "complete.json").is_file():
                args = [str(imgbench), "dataset", "convert", str(source), "--to", name]
                args += ["--out", str(target), "--force", *(PACKING if packed else ())]
                done = subprocess.run(args, capture_output=True, text=True, check=False)
                print(done.stdout.strip().splitlines()[-1] if done.stdout.strip() else "")
                if done.returncode != 0:
                    print(f"{name}: convert failed: {done.stderr.strip()}", file=sys.stderr)
                    continue
            stores.append(Store(f"{name} packed" if packed else name, name, target))
    return stores


def source_of(store: Store) -> Any:
    from imgbench.loaders.pipeline import FileSource, FormatSource

    if store.format == "files":
        paths = image_files(store.path)
        classes = sorted({p.parent.name for p in paths})
        labels = [classes.index(p.parent.name) for p in paths]
        return FileSource([str(p) for p in paths], labels)
    marker = json.loads((store.path / "_imgbench" / "complete.json").read_text())
    return FormatSource(store.format, store.path, int(marker["count"]))


def measure(store: Store, order: str, workers: int, batch: int, epochs: int) -> Figure:
    """Median images/s of ``epochs`` cold epochs after one warm-up epoch."""
    import torch
    from torch.utils.data import DataLoader

    from imgbench.loaders.libs.torch_dataloader import pin_worker_threads
    from imgbench.loaders.pipeline import PipelineConfig, SamplePipeline, batch_images, collate_for
    from imgbench.measure.cache import evict, resident_fraction

    config = PipelineConfig(format=store.format)
    pipeline = SamplePipeline(source_of(store), config)
    extra: dict[str, Any] = {}
    if workers:
        extra = {"multiprocessing_context": "fork", "worker_init_fn": pin_worker_threads}
    loader: DataLoader[Any] = DataLoader(
        pipeline,  # type: ignore[arg-type]  # a map-style dataset by duck typing
        batch_size=batch,
        shuffle=order == "shuffled",
        generator=torch.Generator().manual_seed(0),
        collate_fn=collate_for(config),
        num_workers=workers,
        persistent_workers=False,  # a mapped LMDB would stay cached across epochs
        drop_last=True,
        **extra,
    )
    files = store.files()
    rates, resident = [], 0.0
    for epoch in range(epochs + 1):
        evict(files)
        resident = max(resident, resident_fraction(files))
        start, images = time.perf_counter(), 0
        for out in loader:
            images += batch_images(out)
        if epoch:
            rates.append(images / (time.perf_counter() - start))
    pipeline.close()
    size = sum(f.stat().st_size for f in files) / 1e6
    return Figure(statistics.median(rates), resident, size)


def table(figures: dict[str, Figure]) -> list[str]:
    folder = figures.get("folder")
    lines = [
        "| store | images/s | over the folder | MB | resident after evict |",
        "|---|---:|---:|---:|---:|",
    ]
    for label, fig in figures.items():
        over = f"{fig.images_per_s / folder.images_per_s:.2f}" if folder else "-"
        lines.append(
            f"| {label} | {fig.images_per_s:,.0f} | {over} | {fig.megabytes:,.1f} | "
            f"{fig.resident_after_evict:.0%} |"
        )
    return lines


def run_on(disk: str, stores: list[Store], args: argparse.Namespace) -> None:
    """Every store in every order on ``disk`` (``none``: where the stores are)."""
    from contextlib import ExitStack

    with ExitStack() as stack:
        if disk != "none":
            from imgbench.disks.catalog import disk_profile
            from imgbench.disks.disk import (
                DiskUnavailableError,
                emulated_disk,
                image_bytes,
                tree_bytes,
            )

            size = sum(tree_bytes(s.path) for s in stores)
            try:
                mounted = stack.enter_context(emulated_disk(disk_profile(disk), image_bytes(size)))
            except DiskUnavailableError as exc:
                print(f"\n{disk}: skipped, emulated disk unavailable: {exc}")
                return
            copies = []
            for store in stores:
                target = mounted.mount / store.path.name
                shutil.copytree(store.path, target)
                copies.append(Store(store.label, store.format, target))
            stores = copies
            mounted.join()  # this process and the workers it forks read under the limits
        for order in args.orders.split(","):
            figures = {}
            for store in stores:
                figures[store.label] = measure(store, order, args.workers, args.batch, args.epochs)
                print(f"  {disk} {order} {store.label}: {figures[store.label].images_per_s:,.0f}")
            print(f"\n### {disk} disk, {order}, DataLoader {args.workers} workers, cold\n")
            print("\n".join(table(figures)) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="synthetic-imagenet-like", help="recipe or folder")
    parser.add_argument("--out", type=Path, default=Path("/var/tmp/imgbench-packing"))
    parser.add_argument("--formats", default=",".join(FORMATS))
    parser.add_argument("--disks", default="none,hdd", help="none (the real disk), hdd, ...")
    parser.add_argument("--orders", default="shuffled,sequential")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=2, help="timed epochs after one warm-up")
    args = parser.parse_args(argv)
    from imgbench.datasets import load_dataset

    source = load_dataset(args.dataset, progress=False).root
    args.out.mkdir(parents=True, exist_ok=True)
    stores = convert_all(Path(source), args.out, tuple(args.formats.split(",")))
    print(f"{len(image_files(Path(source)))} images from {source}; stores in {args.out}")
    for disk in args.disks.split(","):
        run_on(disk, stores, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
