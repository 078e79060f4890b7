"""NVIDIA DALI on the CPU: ``fn.decoders.image(device="cpu")`` fed one image's bytes.

A DALI decoder only runs inside a pipeline, so the adapter builds one once: batch size 1, one
thread, no GPU (``device_id=None``), the simple synchronous executor (``exec_async=False,
exec_pipelined=False``: nothing is prefetched, one ``run()`` decodes the bytes just fed), an
``fn.external_source`` the bytes are fed to, and ``fn.decoders.image(output_type=RGB,
adjust_orientation=False)`` (EXIF orientation not applied, as every reader). Each ``decode``
is ``feed_input`` + ``run`` + one copy of DALI's output buffer into a NumPy array, all timed.
DALI 2.x's eager API (``nvidia.dali.experimental.dynamic``) decodes too, but a call took
4-37 ms against the pipeline's 3-4 ms on a 512 x 512 JPEG here, so the pipeline is measured.

DALI decodes through nvImageCodec's CPU back-ends (libjpeg-turbo for JPEG, then libpng,
libwebp, libtiff, OpenCV for the others). A file it cannot decode raises a ``RuntimeError``
(DALI invalidates the pipeline then: the adapter builds a new one for the next image); the
message is the operator's own part of DALI's error, e.g. ``Failed to decode sample #0``.
Each thread (and each forked process) gets a pipeline of its own; a forked child never shuts
down the pipeline it inherited (that waits for the parent's threads, which it does not have).
"""

from __future__ import annotations

import os
import threading
from typing import Any

import numpy as np

from imgbench.readers.base import BytesReader

# DALI's errors repeat a header and the pipeline's Python traceback; the cause follows this
_CAUSE_MARK = "encountered:"
_NOISE = ("Current pipeline object is no longer valid.", "C++ context:")


def dali_cause(exc: BaseException) -> str:
    """The cause in a DALI pipeline error, one line: the part after ``encountered:`` without
    the traceback of the pipeline's definition or the repeated trailer."""
    text = str(exc)
    if _CAUSE_MARK in text:
        text = text.split(_CAUSE_MARK, 1)[1]
    lines = [line.strip().removesuffix(":").strip() for line in text.splitlines()]
    kept = [line for line in lines if line and not line.startswith(_NOISE)]
    return " ".join(kept) or type(exc).__name__


def decode_pipeline(threads: int = 1) -> Any:
    """A built CPU pipeline: external source ``"encoded"`` -> ``fn.decoders.image`` (RGB)."""
    from nvidia.dali import fn, types
    from nvidia.dali.pipeline import Pipeline

    pipe = Pipeline(
        batch_size=1,
        num_threads=threads,
        device_id=None,
        exec_async=False,
        exec_pipelined=False,
        prefetch_queue_depth=1,
    )
    with pipe:
        encoded = fn.external_source(name="encoded", dtype=types.DALIDataType.UINT8, ndim=1)
        pipe.set_outputs(
            fn.decoders.image(
                encoded, device="cpu", output_type=types.DALIImageType.RGB, adjust_orientation=False
            )
        )
    pipe.build()
    return pipe


_INHERITED: list[Any] = []  # pipelines a forked child inherited: never shut down there


def keep_inherited(pipe: Any) -> None:
    """Keep a pipeline built before a fork alive in the child, and out of DALI's shutdown at
    exit: shutting it down there waits for threads that do not exist in the child (a hang)."""
    import weakref

    from nvidia.dali.pipeline import Pipeline

    _INHERITED.append(pipe)
    Pipeline._pipes.discard(weakref.ref(pipe))


class DaliDecoder(BytesReader):
    """One pipeline per thread and process: a pipeline fed from two threads at once mixes their
    images, and one built before a fork has no threads in the child (loaders share a decoder
    between threads, and fork workers after building one)."""

    def __init__(self, threads: int | None = None) -> None:
        self.threads = max(1, threads or 1)
        self._local = threading.local()
        self._pipeline()  # built here, outside the timing; DALI missing fails here

    def _pipeline(self) -> Any:
        local = self._local
        if getattr(local, "pid", None) != os.getpid():
            if getattr(local, "pipe", None) is not None:
                keep_inherited(local.pipe)
            local.pipe, local.pid = decode_pipeline(self.threads), os.getpid()
        return local.pipe

    def decode(self, data: bytes) -> np.ndarray:
        pipe = self._pipeline()
        pipe.feed_input("encoded", [np.frombuffer(data, dtype=np.uint8)])
        try:
            (out,) = pipe.run()
        except RuntimeError as exc:
            self._local.pid = None  # DALI: "Current pipeline object is no longer valid"
            raise RuntimeError(f"DALI fn.decoders.image: {dali_cause(exc)}") from None
        return np.array(out[0])
