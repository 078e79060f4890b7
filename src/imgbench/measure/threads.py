"""Thread pinning for single-thread cases, and a record of the settings in force while timing.

OpenCV, torch, pyarrow and the OpenMP/BLAS pools each keep their own thread count; a case asking
for one thread must pin all of them, or a "single-thread" figure silently uses every core.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass

from threadpoolctl import threadpool_info, threadpool_limits

THREAD_ENV_VARS = (
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "NUMEXPR_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "RAYON_NUM_THREADS",
    "VIPS_CONCURRENCY",
)


@dataclass(frozen=True)
class ThreadSettings:
    threads_opencv: int | None
    threads_torch: int | None
    threads_blas: int | None
    thread_env: str
    allocator_env: str


def current_settings() -> ThreadSettings:
    """What is in force now, for the libraries already loaded (none is imported just to ask)."""
    cv2 = sys.modules.get("cv2")
    torch = sys.modules.get("torch")
    pools = [p.get("num_threads") for p in threadpool_info() if p.get("num_threads")]
    return ThreadSettings(
        threads_opencv=cv2.getNumThreads() if cv2 is not None else None,
        threads_torch=torch.get_num_threads() if torch is not None else None,
        threads_blas=max(pools) if pools else None,
        thread_env=json.dumps({k: os.environ[k] for k in THREAD_ENV_VARS if k in os.environ}),
        allocator_env=json.dumps(
            {
                k: v
                for k, v in sorted(os.environ.items())
                if k.startswith("MALLOC_") or k == "LD_PRELOAD"
            }
        ),
    )


# the libraries whose own thread pools a case pins, when they are imported: module, how to read
# the pool's size, how to set it
_POOLS: tuple[tuple[str, str, str], ...] = (
    ("cv2", "getNumThreads", "setNumThreads"),
    ("torch", "get_num_threads", "set_num_threads"),
    ("pyarrow", "cpu_count", "set_cpu_count"),
)


@contextlib.contextmanager
def thread_limits(threads: int | None) -> Iterator[None]:
    """Pin every known thread pool to ``threads``; ``None`` leaves the library defaults."""
    if threads is None:
        yield
        return
    saved_env = {k: os.environ.get(k) for k in THREAD_ENV_VARS}
    for key in THREAD_ENV_VARS:
        os.environ[key] = str(threads)
    pools = [
        (module, getattr(module, get)(), getattr(module, put))
        for name, get, put in _POOLS
        if (module := sys.modules.get(name)) is not None
    ]
    try:
        for _, _, put in pools:
            put(threads)
        with threadpool_limits(limits=threads):
            yield
    finally:
        for _, saved, put in pools:
            if saved is not None:
                put(saved)
        for key, value in saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
