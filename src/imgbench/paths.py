"""Where the project's folders are: found from the working directory, else from this package."""

from __future__ import annotations

from pathlib import Path


def repo_root() -> Path | None:
    """The imgbench checkout (a folder with pyproject.toml and benches/), or None if installed bare."""
    candidates = [Path.cwd(), *Path.cwd().parents, *Path(__file__).resolve().parents]
    for folder in candidates:
        if (folder / "pyproject.toml").is_file() and (folder / "benches").is_dir():
            return folder
    return None


def benches_dir() -> Path:
    root = repo_root()
    if root is None:
        raise FileNotFoundError("cannot find the imgbench checkout (a folder with benches/)")
    return root / "benches"


def looks_like_path(spec: str) -> bool:
    """A --dataset value is a path (not a recipe name) when it has a slash, a dot prefix, or exists."""
    return "/" in spec or spec.startswith(".") or Path(spec).exists()
