"""The machine reference: how fast this machine runs one fixed workload, recorded in every row.

Two machines of the same kind decoded the same images at 1.0x and 0.57x of each other, and a
results folder holding both could not say which differences were the machine's. So each run
times a fixed workload once (the bundled JPEGs of ``reference_images/``: Pillow's decode, then a
fixed crop, resize to 224, flip and normalisation in NumPy and OpenCV) and its rows carry two
figures: one process on one thread (``reference_1_images_per_s``) and one single-threaded
process per usable CPU at once (``reference_all_images_per_s``, summed). Two points, because a
CPU quota or a smaller machine moves all-core throughput differently from one-thread speed;
``imgbench compare`` reads a configuration's parallelism between them (docs/regression.md).

``imgbench run`` measures it once before its sessions and hands it to them in
``$IMGBENCH_MACHINE_REFERENCE`` (JSON); a session started directly (``pytest benches/``)
measures it itself. ``off`` there turns it off. A failure never fails a run: the columns are
null and ``reference_error`` says why.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import io
import json
import multiprocessing
import os
import queue
import statistics
import time
import warnings
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from imgbench.errors import one_line
from imgbench.measure import quota
from imgbench.measure.threads import thread_limits

REFERENCE_ENV = "IMGBENCH_MACHINE_REFERENCE"
OFF = "off"
OFF_REASON = f"turned off (${REFERENCE_ENV}={OFF})"
IMAGES = Path(__file__).with_name("reference_images")
WORKLOAD = "decode+augment-v1"  # bump when the work per image changes (not the images: hashed)
SIDE = 224  # the augmentation's output square
CROP = 0.875  # the centre square's share of the shorter side
MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
# timed seconds of each figure, in ROUNDS alternating turns (one thread, then every CPU, ...):
# each figure is the median of its turns, so a slow second of a shared host moves one turn,
# not the figure. Two quick runs of one commit here, one 1.5 s window each, read 381 and 299
# images/s on one thread (lab/machine_check.py, 2026-11-29)
SECONDS = 3.0
ROUNDS = 3
WARMUP_S = 0.2  # untimed decodes first (caches, lazy imports, page faults)
REPEATS = 5  # a one-thread turn is the median of this many slices of it
JOIN_S = 30.0  # beyond the window, how long the parent waits for a process's figure


@dataclass(frozen=True)
class MachineReference:
    """The reference's figures, or why there are none (``error``)."""

    workload: str | None = None
    one_images_per_s: float | None = None
    all_images_per_s: float | None = None
    cores: int | None = None  # single-threaded processes behind ``all_images_per_s``
    cpu_quota: float | None = None  # the cgroup quota in CPUs while it ran; None: none
    error: str | None = None

    @property
    def turned_off(self) -> bool:
        return self.error == OFF_REASON

    def columns(self) -> dict[str, Any]:
        """The row's reference columns (results/schema.py)."""
        return {
            "reference_workload": self.workload,
            "reference_1_images_per_s": self.one_images_per_s,
            "reference_all_images_per_s": self.all_images_per_s,
            "reference_cores": self.cores,
            "reference_cpu_quota": self.cpu_quota,
            "reference_error": self.error,
        }

    def to_env(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_env(cls, text: str) -> MachineReference:
        """What ``to_env`` wrote; anything else is a reference with that as its error."""
        if text.strip().lower() == OFF:
            return cls(error=OFF_REASON)
        try:
            values = json.loads(text)
            if not isinstance(values, dict):
                raise TypeError("not a JSON object")
            return cls(**values)
        except (ValueError, TypeError) as exc:
            return cls(error=f"${REFERENCE_ENV} unreadable: {one_line(exc)}")

    def summary(self) -> str:
        """One line for a run's output."""
        if self.error is not None:
            return f"machine reference: none ({self.error})"
        quota = f", CPU quota {self.cpu_quota:g}" if self.cpu_quota is not None else ""
        return (
            f"machine reference ({self.workload}): {self.one_images_per_s:,.0f} images/s on one "
            f"thread, {self.all_images_per_s:,.0f} in {self.cores} processes{quota}"
        )


def image_files() -> list[Path]:
    return sorted(IMAGES.glob("*.jpg"))


def workload_version() -> str:
    """``decode+augment-v1:<12 hex>``: the work and the bytes it decodes; two runs compare
    references of the same version only."""
    digest = hashlib.sha256()
    for path in image_files():
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return f"{WORKLOAD}:{digest.hexdigest()[:12]}"


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity mask). A cgroup quota does not lower it: the
    loader rows run one worker per CPU they see whatever the quota, so the reference runs as many
    processes and shares the quota as they do (under a one-CPU quota here, two reference
    processes summed 353-436 images/s where one alone ran 466-504: the quota's throttling costs
    the processes that share it, and the rows pay it too)."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, cpus or 1)


def _images() -> list[bytes]:
    found = [path.read_bytes() for path in image_files()]
    if not found:
        raise FileNotFoundError(f"no reference images in {IMAGES}")
    return found


def process_one(data: bytes) -> Any:
    """The work per image, pinned: Pillow decode, centre crop, resize to 224, flip, normalise."""
    import cv2
    import numpy as np
    from PIL import Image

    with Image.open(io.BytesIO(data)) as image:
        pixels = np.asarray(image.convert("RGB"))
    height, width = pixels.shape[:2]
    side = int(min(height, width) * CROP)
    top, left = (height - side) // 2, (width - side) // 2
    crop = pixels[top : top + side, left : left + side]
    resized = cv2.resize(crop, (SIDE, SIDE), interpolation=cv2.INTER_LINEAR)
    flipped = resized[:, ::-1]
    mean = np.asarray(MEAN, np.float32) * 255
    scale = 1 / (np.asarray(STD, np.float32) * 255)
    return (flipped.astype(np.float32) - mean) * scale


@contextlib.contextmanager
def _one_thread() -> Iterator[None]:
    importlib.import_module("cv2")  # imported first, so that thread_limits pins its pool too
    with thread_limits(1):
        yield


def _run_for(images: list[bytes], seconds: float, start: int = 0) -> tuple[int, float]:
    """Images processed in about ``seconds`` (whole images), and the seconds they took."""
    clock = time.perf_counter
    begin = clock()
    done = 0
    while True:
        process_one(images[(start + done) % len(images)])
        done += 1
        elapsed = clock() - begin
        if elapsed >= seconds:
            return done, elapsed


def one_thread_rate(images: list[bytes], seconds: float = SECONDS) -> float:
    """Images/s on one thread: the median of ``REPEATS`` slices of ``seconds``, after a warm-up."""
    with _one_thread():
        _run_for(images, min(WARMUP_S, seconds))
        rates: list[float] = []
        for _ in range(REPEATS):
            done, elapsed = _run_for(images, seconds / REPEATS, start=len(rates))
            rates.append(done / elapsed)
    return statistics.median(rates)


def _child(
    images: list[bytes], seconds: float, barrier: Any, results: Any, index: int
) -> None:  # pragma: no cover - runs in a forked process
    try:
        with _one_thread():
            _run_for(images, min(WARMUP_S, seconds), start=index)
            barrier.wait(timeout=JOIN_S)  # the timed windows start together
            done, elapsed = _run_for(images, seconds, start=index)
        results.put(("ok", done / elapsed))
    except BaseException as exc:  # the parent says why, once
        results.put(("error", one_line(exc)))


def all_cores_rate(images: list[bytes], processes: int, seconds: float = SECONDS) -> float:
    """Summed images/s of ``processes`` single-threaded forks running the workload at once.
    Every process started is joined, or terminated, before this returns or raises."""
    context = multiprocessing.get_context("fork")
    barrier = context.Barrier(processes)
    results = context.Queue()
    children = [
        context.Process(target=_child, args=(images, seconds, barrier, results, i), daemon=True)
        for i in range(processes)
    ]
    try:
        for child in children:
            child.start()
        rates = []
        deadline = time.monotonic() + seconds + JOIN_S
        for _ in children:
            try:
                status, value = results.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                raise TimeoutError(f"a reference process gave no figure in {JOIN_S:g} s") from None
            if status != "ok":
                raise RuntimeError(f"a reference process failed: {value}")
            rates.append(float(value))
        return sum(rates)
    finally:
        barrier.abort()  # a process still waiting for the others (one failed) stops waiting
        for child in children:
            if child.pid is not None:
                child.join(timeout=5)
                if child.is_alive():
                    child.terminate()
                    child.join()
        results.close()
        results.join_thread()


def measure_reference(seconds: float = SECONDS, processes: int | None = None) -> MachineReference:
    """Both figures now (about ``2 * seconds`` plus warm-ups), each the median of ``ROUNDS``
    alternating turns; raises on any failure.

    Under a CPU quota each turn lasts at least ten of its periods, as a throttled case's rounds
    do (imgbench.measure.quota): five turns of two processes under a one-CPU quota here read
    273-451 images/s in 0.5 s windows (CV 17%) and 290-328 in 1 s ones (CV 4%)."""
    images = _images()
    cores = processes or usable_cpus()
    limit = quota.cpu_quota()
    turn_s = seconds / ROUNDS
    if limit is not None:  # a turn spans the periods a throttled case's round spans
        turn_s = max(turn_s, limit.round_floor_s())
    ones, everys = [], []
    for _ in range(ROUNDS):
        ones.append(one_thread_rate(images, turn_s))
        everys.append(all_cores_rate(images, cores, turn_s))
    one, every = statistics.median(ones), statistics.median(everys)
    return MachineReference(
        workload=workload_version(),
        one_images_per_s=one,
        all_images_per_s=every,
        cores=cores,
        cpu_quota=limit.cpus if limit is not None else None,
    )


def turned_off() -> bool:
    """``$IMGBENCH_MACHINE_REFERENCE=off``: no reference timed anywhere (the test suite's way)."""
    return os.environ.get(REFERENCE_ENV, "").strip().lower() == OFF


def median_reference(found: list[MachineReference]) -> MachineReference | None:
    """Several timings of one workload as one: the median of each figure (those that failed
    left out); None when none was measured."""
    ok = [r for r in found if r.error is None and r.one_images_per_s and r.all_images_per_s]
    if not ok:
        return None
    return MachineReference(
        workload=ok[0].workload,
        one_images_per_s=statistics.median(r.one_images_per_s or 0.0 for r in ok),
        all_images_per_s=statistics.median(r.all_images_per_s or 0.0 for r in ok),
        cores=ok[0].cores,
        cpu_quota=ok[0].cpu_quota,
    )


def safe_reference(seconds: float = SECONDS) -> MachineReference:
    """``measure_reference``, whose failure is a reference that says why (never an exception)."""
    try:
        return measure_reference(seconds)
    except Exception as exc:
        return MachineReference(error=f"not measured: {one_line(exc)}")


def reference_from_env(measure: bool = True) -> MachineReference | None:
    """The run's reference from ``$IMGBENCH_MACHINE_REFERENCE``; without it, measured now when
    ``measure`` (a session started directly), else None."""
    text = os.environ.get(REFERENCE_ENV)
    if text is not None and text.strip():
        return MachineReference.from_env(text)
    return safe_reference() if measure else None


def session_reference(measure: str) -> MachineReference:
    """The reference a session's rows carry: `imgbench run`'s (its variable), else measured here
    before any case (a session started directly), a failure said once as a warning; a session
    counting instructions (``measure`` not ``wall``) times none."""
    found = reference_from_env(measure=False)
    if found is not None:
        return found
    if measure != "wall":
        return MachineReference(error="not measured: an instruction-count session")
    found = safe_reference()
    if found.error is not None:
        warnings.warn(found.summary(), stacklevel=2)
    return found
