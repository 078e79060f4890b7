"""Named datasets: TOML recipes in ``datasets/`` built on demand into a git-ignored cache.

A recipe's folder name carries a hash of its content, so editing a recipe builds a new dataset
instead of silently reusing the old one. Builds go to a temporary folder renamed into place when
complete, under a file lock, so a crash or a concurrent build never leaves a half dataset that
looks finished.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from imgbench.atomic import atomic_folder

from .manifest import DatasetError

KINDS = ("synth", "sample", "grid")


@dataclass(frozen=True)
class Recipe:
    name: str
    kind: str
    description: str
    params: dict[str, Any]

    @property
    def digest(self) -> str:
        """Changes with the recipe and with the code that renders it (its ``VERSION``)."""
        from . import sample, synth

        code = sample.VERSION if self.kind == "sample" else synth.VERSION
        text = json.dumps({"kind": self.kind, "params": self.params, "code": code}, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:10]


def recipes_dir() -> Path:
    """``IMGBENCH_RECIPES``, else ``datasets/`` of the checkout."""
    if os.environ.get("IMGBENCH_RECIPES"):
        return Path(os.environ["IMGBENCH_RECIPES"])
    from imgbench.paths import repo_root

    root = repo_root()
    if root is None:
        raise DatasetError(
            "no recipes folder: set IMGBENCH_RECIPES or run inside the imgbench checkout"
        )
    return root / "datasets"


def cache_dir() -> Path:
    """``IMGBENCH_CACHE``, else ``datasets/.cache`` of the checkout, else ~/.cache/imgbench."""
    if os.environ.get("IMGBENCH_CACHE"):
        return Path(os.environ["IMGBENCH_CACHE"])
    from imgbench.paths import repo_root

    root = repo_root()
    return (
        root / "datasets" / ".cache" if root else Path.home() / ".cache" / "imgbench" / "datasets"
    )


def names() -> list[str]:
    folder = recipes_dir()
    return sorted(p.stem for p in folder.glob("*.toml")) if folder.is_dir() else []


def get(name: str) -> Recipe:
    path = recipes_dir() / f"{name}.toml"
    if not path.is_file():
        raise DatasetError(
            f"unknown dataset recipe {name!r}; known: {', '.join(names()) or 'none'}"
        )
    try:
        doc = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise DatasetError(f"recipe {path} is not valid TOML: {exc}") from None
    kind = doc.get("kind")
    if kind not in KINDS:
        raise DatasetError(f"recipe {path}: kind must be one of {', '.join(KINDS)}, not {kind!r}")
    return Recipe(name, kind, doc.get("description", ""), dict(doc.get(kind, {})))


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _build(recipe: Recipe, out: Path, progress: bool) -> None:
    from . import sample, synth
    from .detail import parse_detail

    p = recipe.params
    detail = p.get("detail", "medium")
    if recipe.kind == "sample":
        sample.build(out)
    elif recipe.kind == "synth":
        synth.generate(
            out,
            int(p["n"]),
            size=synth.parse_size(p["size"]) if "size" in p else None,
            sizes=p.get("sizes"),
            codec=p.get("codec", "jpeg"),
            quality=int(p.get("quality", 90)),
            subsampling=str(p.get("subsampling", "420")),
            classes=int(p.get("classes", 10)),
            seed=int(p.get("seed", 0)),
            detail=parse_detail(detail, int(p.get("quality", 90)), int(p.get("seed", 0))),
            progress=progress,
        )
    else:
        aw, ah = p.get("aspect", [4, 3])
        for edge in p["long_edges"]:
            for quality in p["qualities"]:
                synth.generate(
                    out / f"le{edge}_q{quality}",
                    int(p["per_cell"]),
                    size=(int(edge), int(edge) * int(ah) // int(aw)),
                    codec=p.get("codec", "jpeg"),
                    quality=int(quality),
                    subsampling=str(p.get("subsampling", "420")),
                    classes=1,
                    seed=int(p.get("seed", 0)),
                    detail=parse_detail(detail, int(quality), int(p.get("seed", 0))),
                    progress=progress,
                )


def materialize(name: str, cache: Path | None = None, *, progress: bool = True) -> Path:
    """The built dataset folder of recipe ``name``, building it first if missing."""
    recipe = get(name)
    cache = Path(cache) if cache is not None else cache_dir()
    target = cache / f"{name}-{recipe.digest}"
    if target.is_dir():
        return target
    with _locked(cache / f".{name}.lock"):
        if target.is_dir():  # another process built it while we waited
            return target
        with atomic_folder(target) as staging:
            _build(recipe, staging, progress)
    return target
