"""pytest plugin for the toy session of ``test_extending.py``: torchvision, kornia and
albumentations unimportable there, as in an env without them.

The toy transform's agreement is computed against every augment library the session can import
(``imgbench.augment.verify.check_transform``); with these three it imported them all and ran
their hflip (about a third of the test's CPU). Without them the toy is compared with Pillow's
hflip, the reference next in line, and each missing library is skipped with its reason.
"""

from __future__ import annotations

import importlib.abc
import sys

BLOCKED = ("torchvision", "kornia", "albumentations")


class _Blocker(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):  # type: ignore[no-untyped-def]
        if name.split(".")[0] in BLOCKED:
            raise ImportError(f"No module named {name!r} (blocked by the test)")
        return None


for _name in list(sys.modules):
    if _name.split(".")[0] in BLOCKED:
        del sys.modules[_name]
sys.meta_path.insert(0, _Blocker())
