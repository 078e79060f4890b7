"""Augmentation libraries: the same transforms and pipelines in each, verified to do the same work.

albumentations checks PyPI for a newer version when imported; a benchmark must not touch the
network, so the switch is set here, before any case can import it. AlbumentationsX sends a usage
event (a 2 s HTTP request) when a pipeline is built unless ALBUMENTATIONS_NO_TELEMETRY is set.
"""

import os

os.environ.setdefault("NO_ALBUMENTATIONS_UPDATE", "1")
os.environ.setdefault("ALBUMENTATIONS_NO_TELEMETRY", "1")
