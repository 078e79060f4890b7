"""A session on an emulated disk: the dataset copied onto it, and the session process throttled.

The runner (the pytest plugin) opens one before any worker server starts: the dataset (a folder,
or a recipe materialized first) is copied to ``<mount>/data/<name>`` (same name, so rows name the
same dataset), the format stores are built beside it (the scratch folder goes on the dataset's
disk, ``measure/scratch.py``), then this process joins the cgroup, so the worker server and every
case's fork read that device under the profile's limits. ``close`` tears it all down.
"""

from __future__ import annotations

import os
import shutil
from contextlib import ExitStack

from imgbench.disks.catalog import disk_profile
from imgbench.disks.disk import EmulatedDisk, emulated_disk, image_bytes, tree_bytes
from imgbench.measure.scratch import SCRATCH_ENV


class DiskSession:
    """The emulated disk of one session, set up by :meth:`open`, removed by :meth:`close`."""

    def __init__(self, profile: str, dataset: str) -> None:
        self.profile = disk_profile(profile)
        self.source = dataset  # a folder or a recipe name
        self.disk: EmulatedDisk | None = None
        self.dataset: str | None = None  # the copy on the emulated disk, once opened
        self._stack = ExitStack()

    def open(self) -> str:
        """Set up the disk, copy the dataset there, throttle this process; the copy's path.
        Raises ``DiskUnavailableError`` (one line) or the dataset's error."""
        from imgbench.datasets import load_dataset

        source = load_dataset(self.source, progress=False)
        root = source.root
        try:
            self.disk = self._stack.enter_context(
                emulated_disk(self.profile, image_bytes(tree_bytes(root)))
            )
            # named as the dataset (a recipe's name, not its cache folder's): the copy's rows
            # name the same dataset as the real disk's, and the HDD/real ratio pairs them
            target = self.disk.mount / "data" / source.name
            shutil.copytree(root, target, symlinks=True)
            stores = self.disk.mount / "stores"  # the format stores, built by the cases
            stores.mkdir()
            self._stack.callback(_restore, SCRATCH_ENV, os.environ.get(SCRATCH_ENV))
            os.environ[SCRATCH_ENV] = str(stores)
            self.disk.join()  # after the copy: the set-up itself is not throttled
        except BaseException:
            self.close()
            raise
        self.dataset = str(target)
        return self.dataset

    def close(self) -> None:
        """Tear the disk down (after the worker server has stopped: nothing holds the mount)."""
        self._stack.close()
        self.disk = None


def _restore(name: str, value: str | None) -> None:
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value
