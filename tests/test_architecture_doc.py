"""docs/architecture.md names real paths: a move or a rename that leaves it behind fails here."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"


def named_paths(text: str) -> list[str]:
    """Every backquoted token that looks like a path of the checkout."""
    tokens = re.findall(r"`([^`\s]+)`", text)
    return [t for t in tokens if "/" in t or t.endswith((".py", ".md", ".toml"))]


def test_every_path_the_architecture_names_exists() -> None:
    paths = named_paths(DOC.read_text(encoding="utf-8"))
    assert len(paths) > 30  # the page names the packages and the engine's modules
    missing = [p for p in paths if not (ROOT / p).exists()]
    assert not missing, f"docs/architecture.md names paths that do not exist: {missing}"


def test_the_check_catches_a_missing_path() -> None:
    assert named_paths("`src/imgbench/nope.py` and `docs/x.md`, not `Settings`") == [
        "src/imgbench/nope.py",
        "docs/x.md",
    ]
