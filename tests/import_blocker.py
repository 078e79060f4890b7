"""Make top-level packages unimportable in this process, as in an environment without them: the
pytest plugins that test a missing library (``-p tests.formats.block_imports``) call it."""

from __future__ import annotations

import importlib.abc
import sys


class _Blocker(importlib.abc.MetaPathFinder):
    def __init__(self, blocked: tuple[str, ...]) -> None:
        self.blocked = blocked

    def find_spec(self, name, path, target=None):  # type: ignore[no-untyped-def]
        if name.split(".")[0] in self.blocked:
            raise ImportError(f"No module named {name!r} (blocked by the test)")
        return None


def block(*blocked: str) -> None:
    """Forget ``blocked`` packages already imported and refuse their imports from now on."""
    for name in list(sys.modules):
        if name.split(".")[0] in blocked:
            del sys.modules[name]
    sys.meta_path.insert(0, _Blocker(blocked))
