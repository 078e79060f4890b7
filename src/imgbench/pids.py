"""Things named after the process that owns them (staging and scratch folders, namespaces):
whether that process is still alive, and the sweep of folders whose owner is gone."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import psutil


def pid_alive(pid: int) -> bool:
    """True while process ``pid`` runs (one of another user's counts as alive). A zombie is
    dead: it has exited and only waits for its parent to collect its status, which a process
    killed with its parent (a Ray node's worker) may wait for a while."""
    if pid == os.getpid():
        return True
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
    except psutil.AccessDenied:
        return True


def remove_dead_owned(parent: Path, prefix: str) -> None:
    """Remove the folders ``PREFIX<pid>-...`` in ``parent`` whose process is gone: a killed
    owner could not remove its own; the next one on the machine does."""
    for folder in parent.glob(prefix + "*"):
        pid = folder.name[len(prefix) :].split("-")[0]
        if pid.isdigit() and not pid_alive(int(pid)):
            shutil.rmtree(folder, ignore_errors=True)
