"""Unix socket paths: Linux caps them at 107 bytes, and a long ``TMPDIR`` crosses the cap silently.

Two places put sockets under a temporary folder: SeaweedFS's local sockets (in the server's data
folder, itself under ``TMPDIR``), and multiprocessing's resource sharer, through which a PyTorch
``DataLoader`` worker hands each batch's shared memory to the main process. Past the cap the first
exits at start-up with ``bind: invalid argument``; the second loses every batch in the worker's
queue thread, and the main process waits for its timeout (or for ever). A test's folder under
pytest-xdist (``/tmp/pytest-of-root/pytest-N/popen-gw0/test_.../tmp``) is long enough for both.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

SUN_PATH_MAX = 107  # sockaddr_un.sun_path is 108 bytes with its terminating NUL
# multiprocessing.util.get_temp_dir() -> "<tmp>/pymp-XXXXXXXX"; its Listener adds
# "/listener-XXXXXXXX" (tempfile's 8 random characters each)
_RESOURCE_SHARER_SUFFIX = len("/pymp-12345678/listener-12345678")


def fits(path: Path | str) -> bool:
    return len(str(path).encode()) <= SUN_PATH_MAX


def socket_dir(preferred: Path, longest_name: str) -> tuple[Path, bool]:
    """Where to put sockets named up to ``longest_name``: ``preferred`` when they fit there, else
    a new private folder under /tmp. The bool says whether the caller made (and removes) it."""
    if fits(preferred / longest_name):
        return preferred, False
    return Path(tempfile.mkdtemp(prefix="imgbench-sock-", dir="/tmp")), True


def resource_sharer_error() -> str | None:
    """Why multiprocessing cannot pass file descriptors between processes here, or None.

    PyTorch's default sharing strategy (``file_descriptor``) sends each tensor's shared memory
    through this socket, so a DataLoader with workers would never receive a batch."""
    tmp = tempfile.gettempdir()
    length = len(tmp.encode()) + _RESOURCE_SHARER_SUFFIX
    if length <= SUN_PATH_MAX:
        return None
    return (
        f"the temporary folder {tmp} ({len(tmp)} characters) is too long for the Unix socket "
        f"through which worker processes hand over tensors ({length} > {SUN_PATH_MAX} bytes): "
        "batches would never arrive; set TMPDIR to a shorter folder"
    )


def check_tensor_handover() -> None:
    """Raise a clear error where worker processes could not hand tensors to this process."""
    import torch.multiprocessing

    if torch.multiprocessing.get_sharing_strategy() != "file_descriptor":
        return  # file_system: shared memory by name, no socket
    if (why := resource_sharer_error()) is not None:
        raise RuntimeError(why)


WORKERS_PREFIX = "imgbench-workers-"


def workers_temp_dir() -> Path:
    """A private folder for a loader's worker processes' temporary files, removed by the loader.

    A worker hands tensors over through a listener socket in its own ``pymp-*`` folder, which
    multiprocessing removes when the worker exits normally; a worker the loader had to kill (a
    hung sample) left it in ``/tmp``, one per killed worker, for good. With ``tempfile.tempdir``
    pointed here in each worker (:func:`use_temp_dir`), the loader's ``close`` removes them all."""
    parent = Path(tempfile.gettempdir())
    longest = f"/{WORKERS_PREFIX}12345678" + "/pymp-12345678/listener-12345678"
    if not fits(str(parent) + longest):
        parent = Path("/tmp")
    return Path(tempfile.mkdtemp(prefix=WORKERS_PREFIX, dir=parent))


def use_temp_dir(folder: str) -> None:
    """In a worker process: its temporary files (multiprocessing's among them) go in ``folder``."""
    tempfile.tempdir = folder
