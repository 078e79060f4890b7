"""`imgbench dataset ...`: generate, scan, sample and build datasets."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from imgbench.console import console, fail
from imgbench.datasets.manifest import DatasetError, ManifestFile

dataset_app = typer.Typer(
    help="Generate, scan and build the datasets benchmarks run on.", no_args_is_help=True
)


@dataset_app.command()
def synth(
    out: Annotated[Path, typer.Option(help="folder to write (ImageFolder layout + labels.csv)")],
    n: Annotated[int, typer.Option(help="number of images")],
    size: Annotated[str | None, typer.Option(help="fixed size WxH, e.g. 500x375")] = None,
    sizes: Annotated[str | None, typer.Option(help="'imagenet': ImageNet-like sizes")] = None,
    codec: Annotated[str, typer.Option(help="jpeg | png | webp | bmp | tiff")] = "jpeg",
    quality: Annotated[int, typer.Option(help="JPEG/WebP quality")] = 90,
    subsampling: Annotated[str, typer.Option(help="444 | 422 | 420 (JPEG)")] = "420",
    classes: Annotated[int, typer.Option(help="class folders")] = 10,
    seed: Annotated[int, typer.Option(help="same seed and options, same bytes")] = 0,
    detail: Annotated[
        str,
        typer.Option(
            help="low | medium | high, a level (1.0 = medium), or KB per megapixel: 250kb[@q90]"
        ),
    ] = "medium",
    workers: Annotated[int | None, typer.Option(help="processes (default: every core)")] = None,
    task: Annotated[
        str, typer.Option(help="classification | segmentation (images/ + masks/ pairs)")
    ] = "classification",
    masks: Annotated[str, typer.Option(help="segmentation masks: palette | rgb PNG")] = "palette",
) -> None:
    """Photo-like synthetic images, deterministic, on every core."""
    from imgbench.datasets import synth as generator
    from imgbench.datasets.detail import parse_detail

    if size is None and sizes is None:
        size = "500x375"
    if task == "segmentation":
        _synth_pairs(out, n, size or "500x375", codec, quality, masks, seed)
        return
    if task != "classification":
        raise fail(ValueError(f"--task is classification or segmentation, not {task}"))
    try:
        fixed = generator.parse_size(size) if size else None
        level = parse_detail(detail, quality, seed)
        start = time.perf_counter()
        generator.generate(
            out,
            n,
            size=fixed,
            sizes=sizes,
            codec=codec,
            quality=quality,
            subsampling=subsampling,
            classes=classes,
            seed=seed,
            detail=level,
            workers=workers,
        )
    except (ValueError, OSError) as exc:
        raise fail(exc) from None
    seconds = time.perf_counter() - start
    console.print(f"{n} images in {out} ({n / seconds:,.0f} images/s)", highlight=False)


def _synth_pairs(
    out: Path, n: int, size: str, codec: str, quality: int, masks: str, seed: int
) -> None:
    from imgbench.datasets import synth as generator
    from imgbench.datasets.pairs_synth import generate_pairs

    try:
        generate_pairs(
            out,
            n,
            size=generator.parse_size(size),
            codec=codec,
            quality=quality,
            masks=masks,
            seed=seed,
        )
    except (ValueError, OSError) as exc:
        raise fail(exc) from None
    console.print(f"{n} image + mask pairs in {out} (images/ + masks/)", highlight=False)


@dataset_app.command()
def scan(
    path: Annotated[Path, typer.Argument(help="a folder of images (recursive)")],
    manifest: Annotated[Path | None, typer.Option(help="write the manifest parquet here")] = None,
    workers: Annotated[int | None, typer.Option(help="processes (default: every core)")] = None,
) -> None:
    """Manifest and summary of any image folder; files it cannot use are listed with the reason."""
    from imgbench.datasets.scan import scan_to_file

    try:  # the manifest stays on disk: memory is flat in the number of images
        result = scan_to_file(path, workers=workers, progress=True)
    except (DatasetError, OSError) as exc:  # OSError: also a worker that died (parallel.py)
        raise fail(exc) from None
    with result:
        _print_scan(result, manifest)
    _print_pairs(path)


def _print_pairs(path: Path) -> None:
    """The segmentation layout found, and every file without a partner (one line each)."""
    from imgbench.datasets.pairs import detect

    layout = detect(path)  # scan_to_file already raised for a layout that does not pair
    if layout is None:
        return
    console.print(
        f"layout: {layout.name} ({layout.image_dir}/ + {layout.mask_dir}/), "
        f"{len(layout.pairs):,} pairs; the masks are not in the manifest",
        highlight=False,
    )
    for line in layout.unpaired_lines():
        console.print(f"[yellow]unpaired[/] {line}", highlight=False)


def _print_scan(result: ManifestFile, manifest: Path | None) -> None:
    summary = result.summary()
    table = Table("", "", show_header=False)
    table.add_row("root", str(result.root))
    table.add_row("fingerprint", result.fingerprint)
    table.add_row("images", f"{summary['count']:,}")
    table.add_row("total size", f"{summary['total_bytes'] / 1e6:,.1f} MB")
    table.add_row("codecs", ", ".join(f"{k}: {v}" for k, v in summary["codecs"].items()))
    table.add_row("modes", ", ".join(f"{k}: {v}" for k, v in summary["modes"].items()))
    for key in ("width", "height", "megapixels"):
        stats = summary.get(key)
        if stats:
            table.add_row(
                f"{key} p5/p50/p95",
                " / ".join(
                    f"{stats[p]:,.2f}" if key == "megapixels" else f"{stats[p]:,.0f}"
                    for p in ("p5", "p50", "p95")
                ),
            )
    table.add_row("excluded files", str(result.n_bad))
    console.print(table)
    for bad in result.iter_bad():
        console.print(f"[yellow]excluded[/] {bad.path}: {bad.reason}", highlight=False)
    if manifest is not None:
        result.load().to_parquet(manifest)  # the layout `Manifest.from_parquet` documents
        console.print(f"manifest: {manifest}", highlight=False)


@dataset_app.command()
def sample(
    out: Annotated[Path, typer.Option(help="folder to write the real photos to")],
) -> None:
    """Real photos that ship inside installed packages, re-encoded; works offline."""
    from imgbench.datasets import sample as real_sample

    try:
        real_sample.build(out)
    except (ImportError, OSError) as exc:
        raise fail(exc) from None
    count = sum(1 for p in out.rglob("*") if p.is_file())
    console.print(f"{count} real photos in {out}", highlight=False)


@dataset_app.command("list")
def list_recipes() -> None:
    """The dataset recipes in datasets/, and whether each is built."""
    from imgbench.datasets import recipes

    table = Table("recipe", "kind", "built", "description")
    try:
        for name in recipes.names():
            recipe = recipes.get(name)
            built = (recipes.cache_dir() / f"{name}-{recipe.digest}").is_dir()
            table.add_row(name, recipe.kind, "yes" if built else "", recipe.description)
    except DatasetError as exc:
        raise fail(exc) from None
    console.print(table)


@dataset_app.command()
def build(
    name: Annotated[str, typer.Argument(help="a recipe name from datasets/")],
) -> None:
    """Build a recipe into the cache (nothing to do when it is already built)."""
    from imgbench.datasets import recipes

    try:
        path = recipes.materialize(name)
    except (DatasetError, OSError) as exc:
        raise fail(exc) from None
    console.print(f"{name}: {path}", highlight=False)


@dataset_app.command()
def convert(
    src: Annotated[
        Path, typer.Argument(help="a folder of images (recursive, ImageFolder or flat)")
    ],
    to: Annotated[str, typer.Option("--to", help="a storage format: lmdb, tar, parquet, ...")],
    out: Annotated[
        Path | None, typer.Option(help="the store to write (default: SRC.FORMAT)")
    ] = None,
    workers: Annotated[int | None, typer.Option(help="processes (default: every core)")] = None,
    force: Annotated[bool, typer.Option(help="replace an existing store at --out")] = False,
    resize_short: Annotated[
        int | None,
        typer.Option(help="shorter side to N pixels, aspect kept, never upscaled (JPEG out)"),
    ] = None,
    quality: Annotated[
        int | None, typer.Option(help="re-encode as JPEG at this quality (1-100)")
    ] = None,
    shards: Annotated[
        int, typer.Option(help="split the store into K files (recordio, tar, lmdb, parquet)")
    ] = 1,
) -> None:
    """Convert a folder of images into a storage format: streamed, atomic, bad files skipped;
    optionally resized, re-encoded and sharded on the way, as im2rec packs."""
    from imgbench.formats.base import FormatError, Packing
    from imgbench.formats.convert import convert as convert_folder
    from imgbench.formats.convert import default_target
    from imgbench.formats.registry import formats, get_format
    from imgbench.measure.memory import peak_rss_bytes

    try:
        spec = get_format(to)
    except KeyError:
        names = ", ".join(f.name for f in formats())
        raise fail(f"unknown format {to!r}; formats: {names}") from None
    missing = spec.unmet_requirement()
    if missing:
        raise fail(f"format {spec.name} cannot be written here: {missing}")
    target = out if out is not None else default_target(src, spec)
    if target.exists() and not force:
        raise fail(f"{target} exists: choose another --out, or --force to replace it")
    try:
        packing = Packing(resize_short=resize_short, quality=quality, shards=shards)
    except ValueError as exc:
        raise fail(exc) from None

    def report_bad(path: str, reason: str) -> None:
        console.print(f"[yellow]skipped[/] {path}: {reason}", highlight=False)

    try:
        report = convert_folder(
            src, spec, target, workers=workers, on_bad=report_bad, packing=packing
        )
    except (DatasetError, FormatError, OSError) as exc:
        raise fail(exc) from None
    ratio = report.bytes_on_disk / report.source_bytes if report.source_bytes else 0.0
    console.print(
        f"{report.records:,} images -> {report.target} ({report.format}): "
        f"{report.images_per_s:,.0f} images/s (scan and check {report.scan_s:,.1f} s, "
        f"write {report.write_images_per_s:,.0f} images/s), "
        f"{report.bytes_on_disk / 1e6:,.1f} MB on disk ({ratio:.3f}x the source), "
        f"{len(report.left_out)} files skipped, peak RSS {peak_rss_bytes() / 2**20:,.0f} MiB"
        + "".join(f", {key.replace('_', '-')} {value}" for key, value in packing.as_pairs()),
        highlight=False,
        soft_wrap=True,  # one line, whatever the terminal's width: a summary to read or grep
    )
