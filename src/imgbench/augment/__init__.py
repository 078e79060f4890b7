"""Augmentation libraries: the same transforms and pipelines in each, verified to do the same work.

albumentations checks PyPI for a newer version when imported; a benchmark must not touch the
network, so the switch is set here, before any case can import it.
"""

import os

os.environ.setdefault("NO_ALBUMENTATIONS_UPDATE", "1")
