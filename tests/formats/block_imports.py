"""pytest plugin: make ``tfrecord`` unimportable in this process, to test a missing library."""

from __future__ import annotations

from tests.import_blocker import block

BLOCKED = ("tfrecord",)  # not zarr: it registers a pytest11 plugin of its own
block(*BLOCKED)
