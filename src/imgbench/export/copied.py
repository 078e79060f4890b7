"""Top-level definitions copied out of imgbench's adapters, so an exported module runs the same
code the rows measured: the adapter stays the one source of truth for a recipe's steps and its
constants, nothing is written twice by hand.

A definition is found by name in its module's source (``ast``), and its references to
``spec.NAME`` and ``handmade.NAME`` are rewritten to plain names; the spec constants it uses
are written out once, above the definitions, from ``imgbench.augment.spec`` itself.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
from collections.abc import Iterable

from imgbench.augment import spec

_QUALIFIED = re.compile(r"\b(spec|handmade)\.([A-Za-z_][A-Za-z0-9_]*)")
_SPEC_NAME = re.compile(r"\bspec\.([A-Z_][A-Z0-9_]*)\b")


class CopyError(LookupError):
    """A definition the export needs is not in the adapter any more (renamed or removed)."""


def definition(module_name: str, name: str) -> str:
    """The source of the top-level function, class or assignment ``name`` in ``module_name``."""
    module = importlib.import_module(module_name)
    source = inspect.getsource(module)
    for node in ast.parse(source).body:
        if _defines(node, name):
            segment = ast.get_source_segment(source, node, padded=False)
            if segment is not None:
                return segment
    raise CopyError(f"{module_name} defines no {name!r}: the export's template is out of date")


def _defines(node: ast.stmt, name: str) -> bool:
    if isinstance(node, ast.FunctionDef | ast.ClassDef):
        return node.name == name
    if isinstance(node, ast.Assign):
        return any(isinstance(t, ast.Name) and t.id == name for t in node.targets)
    if isinstance(node, ast.AnnAssign):
        return isinstance(node.target, ast.Name) and node.target.id == name
    return False


def spec_names(code: str) -> list[str]:
    """The ``spec.NAME`` constants ``code`` uses, in order of first use."""
    return list(dict.fromkeys(_SPEC_NAME.findall(code)))


def unqualified(code: str) -> str:
    """``spec.SIZE`` -> ``SIZE``, ``handmade.rrc_box`` -> ``rrc_box``: the exported module holds
    both as its own top-level names."""
    return _QUALIFIED.sub(lambda m: m.group(2), code)


def copy_all(parts: Iterable[tuple[str, str]]) -> tuple[list[str], str]:
    """(spec constants used, the definitions' code) for ``(module, name)`` pairs, in order."""
    blocks = [definition(module, name) for module, name in parts]
    used: list[str] = []
    for block in blocks:
        used += [n for n in spec_names(block) if n not in used]
    return used, "\n\n\n".join(unqualified(b) for b in blocks)


def spec_constants(names: Iterable[str]) -> str:
    """``NAME = value`` lines for spec constants, with their values as imgbench has them."""
    lines = []
    for name in names:
        if not hasattr(spec, name):
            raise CopyError(f"imgbench.augment.spec has no {name}")
        lines.append(f"{name} = {getattr(spec, name)!r}")
    return "\n".join(lines)
