"""``"module:attribute"`` references, imported on use: one reader for every registry."""

from __future__ import annotations

import importlib
from typing import Any


def load_attr(target: str) -> Any:
    """The attribute ``target`` names (``"package.module:name"``), importing its module now, so
    that listing a registry imports no library."""
    module_name, _, attr = target.partition(":")
    if not module_name or not attr:
        raise ValueError(f"{target!r}: expected 'module:attribute'")
    return getattr(importlib.import_module(module_name), attr)
