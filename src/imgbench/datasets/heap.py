"""glibc's mmap threshold pinned in the dataset tools' processes, so peak RSS stays flat.

glibc serves allocations above ``M_MMAP_THRESHOLD`` (128 KiB) with their own mappings, returned to
the kernel on free, but by default it raises the threshold to the size of every mapped chunk that
is freed. After the first large buffer, the 100-200 KB image payloads a conversion copies come
from the heap, which fragments and keeps growing. Measured (2026-11-23, `imgbench dataset convert`
to parquet, ImageNet-sized JPEGs, peak anonymous RSS): 111 -> 135 MiB from 4,000 to 40,000 images
with the moving threshold, 93 -> 101 MiB with it pinned. Setting the threshold with ``mallopt``
also turns the adjustment off. Only the dataset tools call this: a benchmark's allocator state is a
recorded dimension (``imgbench.measure.allocator``) and must not be changed behind it.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools

M_MMAP_THRESHOLD = -3  # <malloc.h>
THRESHOLD_BYTES = 128 * 1024  # glibc's initial value


@functools.cache
def pin_mmap_threshold() -> bool:
    """Pin glibc's mmap threshold at its initial value; False where the C library is not glibc."""
    name = ctypes.util.find_library("c")
    if not name:
        return False
    try:
        libc = ctypes.CDLL(name)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    return bool(mallopt(M_MMAP_THRESHOLD, THRESHOLD_BYTES))
