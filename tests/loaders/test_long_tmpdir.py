"""A TMPDIR too long for multiprocessing's Unix socket: a DataLoader with workers would wait for
batches that never come (torch hands each tensor over through that socket); imgbench says why."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from imgbench.unix_sockets import SUN_PATH_MAX, resource_sharer_error

# In a fresh interpreter, a real fork DataLoader with one worker under a TMPDIR of each length
# (multiprocessing keeps its first temporary folder for the process's life: forgotten each time)
SCRIPT = textwrap.dedent(
    """
    import json, multiprocessing, sys, tempfile
    import torch
    from torch.utils.data import DataLoader
    from imgbench.unix_sockets import resource_sharer_error
    for folder in sys.argv[1:]:
        tempfile.tempdir = folder
        multiprocessing.current_process()._config.pop("tempdir", None)
        out = {"check": resource_sharer_error()}
        loader = DataLoader(list(range(4)), batch_size=2, num_workers=1, timeout=2,
                            multiprocessing_context="fork")
        try:
            out["batch"] = next(iter(loader)).tolist()
        except RuntimeError as exc:
            out["error"] = str(exc)
        print(json.dumps(out))
    """
)


def _folder(tmp_path: Path, length: int) -> Path:
    folder = tmp_path / ("d" * (length - len(str(tmp_path)) - 1))
    folder.mkdir()
    assert len(str(folder)) == length
    return folder


def _run(*folders: Path) -> list[dict]:  # type: ignore[type-arg]
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, *map(str, folders)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return [json.loads(line) for line in proc.stdout.splitlines()[-len(folders) :]]


def test_the_check_draws_the_line_where_batches_stop_arriving(tmp_path: Path) -> None:
    """The longest TMPDIR that works, and one character more: batches arrive, then never do
    (the worker's queue thread fails with "AF_UNIX path too long"), and the check agrees."""
    longest = SUN_PATH_MAX - len("/pymp-12345678/listener-12345678")
    fits, too_long = _run(_folder(tmp_path, longest), _folder(tmp_path, longest + 1))
    assert fits == {"check": None, "batch": [0, 1]}
    assert "timed out" in too_long["error"] and "batch" not in too_long
    assert "too long for the Unix socket" in too_long["check"]


def test_a_dataloader_case_under_a_long_tmpdir_fails_naming_the_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tempfile

    from imgbench.loaders.libs.torch_dataloader import TorchLoader

    folder = _folder(tmp_path, 90)
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    assert resource_sharer_error() is not None
    with pytest.raises(RuntimeError, match="set TMPDIR to a shorter folder") as info:
        TorchLoader([0, 1], {"workers": 2, "batch_size": 1})  # type: ignore[arg-type]
    assert str(folder) in str(info.value)


KILLED = textwrap.dedent(
    """
    import json, os, signal
    import torch
    from torch.utils.data import default_collate
    from imgbench.loaders.libs.torch_dataloader import TorchLoader

    loader = TorchLoader(list(range(8)), {"workers": 1, "batch_size": 2},
                         collate_fn=default_collate)
    batch = next(loader.batches())
    inside = sorted(p.name[:5] for p in loader.temp_dir.iterdir())
    for pid in loader.worker_pids():  # as the loader kills a worker that hangs
        os.kill(pid, signal.SIGKILL)
    loader.close()
    print(json.dumps({"batch": batch.tolist(), "inside": inside,
                      "left": loader.temp_dir.exists()}))
    """
)


def test_a_killed_workers_socket_folder_goes_with_the_loader(tmp_path: Path) -> None:
    """A worker killed mid-case leaves its ``pymp-*`` folder (its tensor hand-over socket); it
    sits in the loader's own folder, which ``close`` removes: nothing left in TMPDIR."""
    proc = subprocess.run(
        [sys.executable, "-c", KILLED],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "TMPDIR": str(tmp_path)},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    found = json.loads(proc.stdout.splitlines()[-1])
    assert len(found["batch"]) == 2
    assert found["inside"] == ["pymp-"]  # the worker's socket folder was in the loader's
    assert found["left"] is False
    assert list(tmp_path.iterdir()) == []  # and nothing else under TMPDIR
