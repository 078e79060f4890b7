"""pytest plugin: make ``tfrecord`` unimportable in this process, to test a missing library."""

from __future__ import annotations

import importlib.abc
import sys

BLOCKED = ("tfrecord",)  # not zarr: it registers a pytest11 plugin of its own


class _Blocker(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):  # type: ignore[no-untyped-def]
        if name.split(".")[0] in BLOCKED:
            raise ImportError(f"No module named {name!r} (blocked by the test)")
        return None


for _name in list(sys.modules):
    if _name.split(".")[0] in BLOCKED:
        del sys.modules[_name]
sys.meta_path.insert(0, _Blocker())
