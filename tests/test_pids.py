"""Folders named after their owner's pid are swept once the owner is gone, zombies included."""

from __future__ import annotations

import os
from pathlib import Path

from imgbench.pids import pid_alive, remove_dead_owned


def test_an_exited_child_not_yet_reaped_is_dead_and_its_folder_is_swept(tmp_path: Path) -> None:
    child = os.fork()
    if child == 0:
        os._exit(0)
    try:
        # the child has exited; until waitpid it is a zombie, which os.kill(pid, 0) still finds
        while True:
            with open(f"/proc/{child}/stat") as stat:
                if stat.read().rsplit(")", 1)[1].split()[0] == "Z":
                    break
        owned = tmp_path / f"owned-{child}-x"
        mine = tmp_path / f"owned-{os.getpid()}-y"
        owned.mkdir()
        mine.mkdir()
        assert not pid_alive(child)
        assert pid_alive(os.getpid())
        remove_dead_owned(tmp_path, "owned-")
        assert not owned.exists() and mine.exists()
    finally:
        os.waitpid(child, 0)
    assert not pid_alive(child)
