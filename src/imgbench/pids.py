"""Things named after the process that owns them (staging and scratch folders, namespaces):
whether that process is still alive, and the sweep of folders whose owner is gone."""

from __future__ import annotations

import os
import shutil
from pathlib import Path


def pid_alive(pid: int) -> bool:
    """True while process ``pid`` exists (one of another user's counts as alive)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_dead_owned(parent: Path, prefix: str) -> None:
    """Remove the folders ``PREFIX<pid>-...`` in ``parent`` whose process is gone: a killed
    owner could not remove its own; the next one on the machine does."""
    for folder in parent.glob(prefix + "*"):
        pid = folder.name[len(prefix) :].split("-")[0]
        if pid.isdigit() and not pid_alive(int(pid)):
            shutil.rmtree(folder, ignore_errors=True)
