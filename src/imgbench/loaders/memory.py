"""RSS, PSS and USS of the main process and of each worker, sampled over a run in a thread.

Two clocks: every ``interval_s`` a full sample, and in between, every ``light_interval_s``, RSS
alone (``rss_timeline``), which is cheap enough to show growth within a short case.
``psutil.Process.memory_full_info()`` reads ``/proc/PID/smaps_rollup``: USS is what a process
holds alone (what copy-on-access grows), PSS shares every shared page fairly between the
processes mapping it (so PSS summed over processes is the true footprint), RSS counts shared
pages in full in every process. The sampler records one point per process per interval, and
summarises the peak of the summed PSS and its growth per minute (a least-squares slope).
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import psutil

# Reading smaps_rollup walks a process's page tables (about 10 ms for a worker that imported
# torch) under its mmap lock, which stalls that worker's shared-memory allocations: throughput
# rows sample every 2 s and record what the sampling cost; the memory experiment samples faster.
DEFAULT_INTERVAL_S = 2.0
# RSS alone comes from /proc/PID/statm (counters, no page walk): 33 us against smaps_rollup's
# 21 ms for a process that imported torch, so it is sampled often enough to draw growth
# (``rss_timeline``); PSS and USS stay on the slow clock above
LIGHT_INTERVAL_S = 0.1


def sample_process(proc: psutil.Process) -> dict[str, int] | None:
    try:
        info = proc.memory_full_info()
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return None
    return {
        "rss_bytes": int(info.rss),
        "pss_bytes": int(getattr(info, "pss", 0)),
        "uss_bytes": int(info.uss),
    }


class MemorySampler:
    """Samples the main process and the pids ``worker_pids()`` returns, until ``stop()``."""

    def __init__(
        self,
        worker_pids: Callable[[], list[int]],
        interval_s: float = DEFAULT_INTERVAL_S,
        light_interval_s: float | None = LIGHT_INTERVAL_S,
    ) -> None:
        self.worker_pids = worker_pids
        self.interval_s = interval_s
        self.light_interval_s = light_interval_s  # None: no RSS points between full samples
        self.timeline: list[dict[str, Any]] = []
        self.rss_timeline: list[dict[str, Any]] = []  # {t_s, process, rss_bytes}
        self.light_sampling_s = 0.0  # wall time the RSS points cost
        self._last_full = 0.0
        self._names: dict[int, str] = {}
        self._procs: dict[int, psutil.Process] = {os.getpid(): psutil.Process()}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._start = 0.0
        self.sampling_s = 0.0  # wall time spent sampling: the sampler's own overhead

    def _name(self, pid: int) -> str:
        if pid == os.getpid():
            return "main"
        if pid not in self._names:
            self._names[pid] = f"worker-{len(self._names)}"
        return self._names[pid]

    def sample(self) -> None:
        begin = time.perf_counter()
        t = round(begin - self._start, 3)
        with contextlib.suppress(Exception):  # a worker list read while the loader changes it
            for pid in self.worker_pids():
                if pid not in self._procs:
                    with contextlib.suppress(psutil.NoSuchProcess):
                        self._procs[pid] = psutil.Process(pid)
        for pid, proc in list(self._procs.items()):
            point = sample_process(proc)
            if point is None:
                continue
            self.timeline.append({"t_s": t, "process": self._name(pid), **point})
        self._last_full = begin
        self.sampling_s += time.perf_counter() - begin

    def sample_rss(self) -> None:
        """One cheap RSS point per known process (no new workers: the full sample finds them)."""
        begin = time.perf_counter()
        t = round(begin - self._start, 3)
        for pid, proc in list(self._procs.items()):
            try:
                rss = int(proc.memory_info().rss)
            except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                continue
            self.rss_timeline.append({"t_s": t, "process": self._name(pid), "rss_bytes": rss})
        self.light_sampling_s += time.perf_counter() - begin

    def _run(self) -> None:
        tick = min(self.interval_s, self.light_interval_s or self.interval_s)
        while not self._stop.wait(tick):
            if time.perf_counter() - self._last_full >= self.interval_s - tick / 2:
                self.sample()
            else:
                self.sample_rss()

    def start(self) -> MemorySampler:
        self._start = time.perf_counter()
        self.sample()
        self._thread = threading.Thread(target=self._run, name="imgbench-memory", daemon=True)
        self._thread.start()
        return self

    def now(self) -> float:
        """Seconds since the sampler started, on the timeline's clock."""
        return time.perf_counter() - self._start

    def stop(self, steady_from_s: float = 0.0) -> dict[str, Any]:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        self.sample()
        summary = summarise(self.timeline, steady_from_s)
        summary["memory_interval_s"] = self.interval_s
        summary["memory_sampling_s"] = round(self.sampling_s, 4)
        if self.light_interval_s is not None:
            summary["rss_timeline"] = self.rss_timeline
            summary["memory_light_interval_s"] = self.light_interval_s
            summary["memory_light_sampling_s"] = round(self.light_sampling_s, 4)
        return summary


def summarise(timeline: list[dict[str, Any]], steady_from_s: float = 0.0) -> dict[str, Any]:
    """Peak of the summed PSS over the run; its growth per minute from ``steady_from_s`` on
    (after start-up and warm-up, so starting workers do not count as growth); and the last
    USS/PSS of each process."""
    if not timeline:
        return {"memory_timeline": []}
    totals: dict[float, int] = {}
    for point in timeline:
        totals[point["t_s"]] = totals.get(point["t_s"], 0) + point["pss_bytes"]
    times = np.array(sorted(totals), dtype=float)
    pss = np.array([totals[t] for t in sorted(totals)], dtype=float)
    steady = times >= steady_from_s
    growth = None
    if steady.sum() >= 3 and np.ptp(times[steady]) > 0:
        growth = float(np.polyfit(times[steady], pss[steady], 1)[0] * 60)
    last: dict[str, dict[str, int]] = {}
    uss: dict[str, list[tuple[float, int]]] = {}
    for point in timeline:
        last[point["process"]] = point
        if point["t_s"] >= steady_from_s:
            uss.setdefault(point["process"], []).append((point["t_s"], point["uss_bytes"]))
    workers = [p for name, p in last.items() if name != "main"]
    return {
        "memory_timeline": timeline,
        "peak_pss_bytes": int(pss.max()),
        "pss_growth_bytes_per_min": growth,
        "pss_growth_window_s": float(np.ptp(times[steady])) if steady.any() else 0.0,
        "final_uss_bytes": {name: p["uss_bytes"] for name, p in sorted(last.items())},
        # each process's own memory: copy-on-access grows a worker's USS, whatever the others do
        "uss_growth_bytes_per_min": {name: _slope_per_min(uss[name]) for name in sorted(uss)},
        "final_pss_bytes": {name: p["pss_bytes"] for name, p in sorted(last.items())},
        "worker_uss_bytes_mean": int(np.mean([p["uss_bytes"] for p in workers]))
        if workers
        else None,
        "worker_pss_bytes_mean": int(np.mean([p["pss_bytes"] for p in workers]))
        if workers
        else None,
    }


def _slope_per_min(points: list[tuple[float, int]]) -> float | None:
    """Least-squares slope of (seconds, bytes) points, per minute; None under 3 points."""
    times = np.array([t for t, _ in points], dtype=float)
    if len(points) < 3 or np.ptp(times) <= 0:
        return None
    values = np.array([v for _, v in points], dtype=float)
    return float(np.polyfit(times, values, 1)[0] * 60)
