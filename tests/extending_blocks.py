"""pytest plugin for the toy session of ``test_extending.py``: torchvision, kornia and
albumentations unimportable there, as in an env without them.

The toy transform's agreement is computed against every augment library the session can import
(``imgbench.augment.verify.check_transform``); with these three it imported them all and ran
their hflip (about a third of the test's CPU). Without them the toy is compared with Pillow's
hflip, the reference next in line, and each missing library is skipped with its reason.
"""

from __future__ import annotations

from tests.import_blocker import block

BLOCKED = ("torchvision", "kornia", "albumentations")
block(*BLOCKED)
