"""The memory allocator a measuring process runs with: a recorded dimension, not an accident.

Decoding 1-4 MP JPEGs with Pillow runs at about 61 images/s in a fresh process and at 134-138
images/s once glibc stops returning freed memory to the kernel (measured here; docs/measuring.md):
which state a process is in depends on what it did before. So each worker process starts with a
named allocator setting, and the row records it:

* ``glibc``: the default, every ``MALLOC_*`` variable unset;
* ``glibc-tuned``: ``MALLOC_TRIM_THRESHOLD_``, ``MALLOC_MMAP_THRESHOLD_`` and ``MALLOC_TOP_PAD_``
  set (values below), so freed blocks stay with the process;
* ``jemalloc`` and ``tcmalloc``: ``LD_PRELOAD`` of Debian's ``libjemalloc2`` and
  ``libtcmalloc-minimal4``; missing, the setting is unavailable and says why.
"""

from __future__ import annotations

import ctypes
import json
import os
from dataclasses import dataclass
from pathlib import Path

GLIBC_TUNED = {
    "MALLOC_TRIM_THRESHOLD_": "1000000000",
    "MALLOC_MMAP_THRESHOLD_": "100000000",
    "MALLOC_TOP_PAD_": "100000000",
}
_LIB_DIRS = ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib")
_PRELOADS = {
    "jemalloc": ("libjemalloc.so.2", "libjemalloc2"),
    "tcmalloc": ("libtcmalloc_minimal.so.4", "libtcmalloc-minimal4"),
}
ALLOCATORS = ("glibc", "glibc-tuned", *_PRELOADS)
_VARIABLES = ("LD_PRELOAD", *GLIBC_TUNED)


class AllocatorUnavailableError(RuntimeError):
    """The allocator's library is not installed: one line with the package to install."""


@dataclass(frozen=True)
class Allocator:
    name: str
    environment: dict[str, str]  # what is set in the worker's environment (all else unset)

    def settings_json(self) -> str:
        return json.dumps(self.environment, sort_keys=True)


def _library(file_name: str) -> Path | None:
    return next((Path(d) / file_name for d in _LIB_DIRS if (Path(d) / file_name).is_file()), None)


def allocator(name: str) -> Allocator:
    """The environment of a named allocator setting; AllocatorUnavailableError when it cannot run."""
    if name == "glibc":
        return Allocator(name, {})
    if name == "glibc-tuned":
        return Allocator(name, dict(GLIBC_TUNED))
    if name in _PRELOADS:
        file_name, package = _PRELOADS[name]
        path = _library(file_name)
        if path is None:
            raise AllocatorUnavailableError(
                f"{name}: {file_name} not found (apt-get install {package}; make test does)"
            )
        return Allocator(name, {"LD_PRELOAD": str(path)})
    raise ValueError(f"unknown allocator {name!r}; known: {list(ALLOCATORS)}")


def environment_for(base: dict[str, str], chosen: Allocator) -> dict[str, str]:
    """``base`` without any allocator variable, plus the chosen allocator's."""
    clean = {k: v for k, v in base.items() if k not in _VARIABLES and not k.startswith("MALLOC_")}
    return {**clean, **chosen.environment}


def current() -> str:
    """The allocator setting this process runs with, named as in ALLOCATORS (or 'custom')."""
    preload = os.environ.get("LD_PRELOAD", "")
    malloc = {k: v for k, v in os.environ.items() if k.startswith("MALLOC_")}
    for name, (file_name, _) in _PRELOADS.items():
        if file_name in preload:
            return name if not malloc else "custom"
    if preload:
        return "custom"
    if not malloc:
        return "glibc"
    return "glibc-tuned" if malloc == GLIBC_TUNED else "custom"


# glibc raises its mmap threshold to the size of any mmapped block freed, up to this (64-bit
# DEFAULT_MMAP_THRESHOLD_MAX), and its trim threshold to twice that
GLIBC_MMAP_THRESHOLD_MAX = 32 * 1024 * 1024
_SETTLE_BYTES = GLIBC_MMAP_THRESHOLD_MAX - 64 * 1024  # its chunk stays under the maximum


def settle_glibc() -> bool:
    """Bring glibc's dynamic thresholds to where a long-running process ends up: free one
    mmapped block just under 32 MiB, which raises the mmap threshold to about 32 MiB and the trim
    threshold to twice that, by glibc's own rule (no ``mallopt``: the thresholds stay dynamic).

    Why: the worker server's thresholds were whatever its imports left. Forked children decoding
    the same JPEGs with Pillow ran at 593 images/s (427 page faults per image) after importing
    nothing, 1,052 after torch, 1,279 after torch, pyarrow and lmdb. After settling, every
    import set gives a child without page faults. Only for the ``glibc`` setting: tuned glibc
    pins its thresholds, and jemalloc and tcmalloc do not have these. Returns whether it ran."""
    if current() != "glibc":
        return False
    try:
        libc = ctypes.CDLL(None)
        libc.malloc.restype = ctypes.c_void_p
        libc.malloc.argtypes = [ctypes.c_size_t]
        libc.free.argtypes = [ctypes.c_void_p]
    except (OSError, AttributeError):
        return False
    block = libc.malloc(_SETTLE_BYTES)
    if not block:
        return False
    libc.free(block)
    return True
