"""Files gone bad after the dataset scan (the scan leaves truncated and empty files out): a folder
of three good photos and one bad file, and the first error a loader gives over it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psutil

from imgbench.loaders.base import LoaderError
from imgbench.loaders.pipeline import FileSource, SampleError, SamplePipeline
from imgbench.loaders.registry import get_loader, pipeline_config

BAD_FILES = ("truncated.jpg", "empty.jpg", "png_named.jpg")


def children() -> set[int]:
    return {p.pid for p in psutil.Process().children(recursive=True)}


def folder(root: Path, photo_dir: Path, bad: str) -> list[str]:
    """Three good photos and one bad file: a truncated JPEG, a zero-byte file or a PNG named
    .jpg (the dataset scan leaves the first two out; these are files gone bad after it)."""
    from PIL import Image

    good = sorted(photo_dir.rglob("*.jpg"))[:3]
    root.mkdir()
    for i, path in enumerate(good):
        (root / f"good_{i}.jpg").write_bytes(path.read_bytes())
    data = good[0].read_bytes()
    if bad == "truncated.jpg":
        (root / bad).write_bytes(data[: len(data) // 2])
    elif bad == "empty.jpg":
        (root / bad).write_bytes(b"")
    else:
        with Image.open(good[1]) as image:
            image.save(root / bad, format="PNG")
    return sorted(str(p) for p in root.iterdir())


def first_error(
    library: str, pipeline: str, paths: list[str], params: dict[str, Any] | None = None
) -> str | None:
    """The loader's error within a few batches of the pool, or None; nothing may survive it."""
    source = FileSource(paths, [0] * len(paths))
    params = {"workers": 2, "batch_size": len(paths), "batch_timeout_s": 30, **(params or {})}
    loader = (
        get_loader(library).load().build(SamplePipeline(source, pipeline_config(pipeline)), params)
    )
    before = children()
    try:
        batches = loader.batches()
        for _ in range(4):  # completion order: a batch may take the next epoch's samples first
            next(batches)
    except (LoaderError, SampleError) as exc:  # what a row's reason would say
        return str(exc)
    finally:
        loader.close()
        assert not [p for p in children() - before if psutil.pid_exists(p)]
    return None
