"""Stacks of the main process and of every worker, sampled by py-spy while batches flow.

py-spy (``py-spy record --pid PID --subprocesses --format speedscope --nonblocking``) reads the
interpreters' memory from outside, so it sees every DataLoader worker without any code in them;
``--nonblocking`` does not pause them, at the price of a rare torn stack. It is started on this
process, runs while the caller pulls batches, and is stopped with SIGINT, on which it writes its
speedscope file. Only threads that were running are sampled (py-spy's default): time spent
waiting for a batch is not attributed to anything. :meth:`StackSampler.start` returns once py-spy
says it is sampling (it first reads the interpreter's symbols, which took over 1.5 s on a cold CI
runner): the caller's sampling phase is then all sampled time.

Needs ptrace permission on the process (root, or ``kernel.yama.ptrace_scope`` 0 or 1 for a
parent); when py-spy is missing or refused, :meth:`StackSampler.start` says why and the profile
goes on without stacks.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PROFILE_NAME = re.compile(r'(?:Process (\d+) )?Thread (\d+)(?: "(.*)")?')
SKIPPED_THREADS = ("imgbench-memory",)  # the memory sampler's thread: imgbench's, not the user's
SAMPLING_LINE = b"Sampling process"  # py-spy's first line once it has attached


@dataclass(frozen=True)
class Frame:
    name: str
    file: str
    line: int


@dataclass(frozen=True)
class Stack:
    pid: int
    thread: str
    frames: tuple[Frame, ...]  # outermost first
    weight: float


def py_spy() -> str | None:
    """The py-spy executable beside this interpreter, or on PATH."""
    beside = Path(sys.executable).with_name("py-spy")
    if beside.is_file():
        return str(beside)
    return shutil.which("py-spy")


class StackSampler:
    """One py-spy recording of this process and its children, into ``out`` (speedscope JSON)."""

    def __init__(self, out: Path, rate: int = 100) -> None:
        self.out = Path(out)
        self.rate = rate
        self._process: subprocess.Popen[bytes] | None = None
        self._early_output = b""
        self.error: str | None = None
        self.start_s: float | None = None  # from launch to py-spy's first sample

    def start(self, ready_timeout_s: float = 30.0) -> bool:
        """Start sampling and wait until py-spy samples; False (with ``error`` set) when py-spy
        cannot run here or did not start within ``ready_timeout_s``."""
        exe = py_spy()
        if exe is None:
            self.error = "py-spy is not installed (pip install py-spy)"
            return False
        self.out.parent.mkdir(parents=True, exist_ok=True)
        command = [
            exe,
            "record",
            "--pid",
            str(os.getpid()),
            "--subprocesses",
            "--nonblocking",
            "--format",
            "speedscope",
            "--rate",
            str(self.rate),
            "--output",
            str(self.out),
        ]
        launched = time.perf_counter()
        self._process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
        state = self._wait_until_sampling(ready_timeout_s)
        if state == "sampling":
            self.start_s = round(time.perf_counter() - launched, 3)
            return True
        self.stop()
        self.error = (
            f"py-spy did not start sampling: {_last_line(self._early_output)}"
            if state == "exited"  # it closed its output: an error, not a slow start
            else f"py-spy did not start sampling within {ready_timeout_s:g} s"
        )
        return False

    def _wait_until_sampling(self, timeout_s: float) -> str:
        """Read py-spy's output until its "Sampling process" line ("sampling"), its exit
        ("exited") or ``timeout_s`` ("timeout"). A thread reads, so that a py-spy that neither
        prints nor exits cannot block us."""
        process = self._process
        assert process is not None and process.stdout is not None
        stdout = process.stdout
        seen = threading.Event()
        lines: list[bytes] = []

        def read() -> None:
            for line in iter(stdout.readline, b""):
                lines.append(line)
                if SAMPLING_LINE in line:
                    seen.set()
                    return

        reader = threading.Thread(target=read, name="imgbench-py-spy-start", daemon=True)
        reader.start()
        reader.join(timeout_s)
        self._early_output = b"".join(lines)
        if seen.is_set():
            return "sampling"
        return "timeout" if reader.is_alive() else "exited"

    def stop(self, timeout_s: float = 30.0) -> list[Stack]:
        """Stop py-spy (SIGINT: it writes its file) and read the stacks; [] with ``error`` set
        when it failed (its own last line says why, e.g. a ptrace permission error)."""
        process, self._process = self._process, None
        if process is None:
            return []
        output = b""
        try:
            if process.poll() is None:
                process.send_signal(signal.SIGINT)
            output, _ = process.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            process.kill()
            output, _ = process.communicate()
            self.error = f"py-spy did not stop within {timeout_s:g} s"
            return []
        finally:
            if process.poll() is None:  # never leave the sampler behind
                with contextlib.suppress(OSError):
                    process.kill()
                process.wait()
        output = self._early_output + (output or b"")
        if not self.out.is_file():
            self.error = f"py-spy wrote no profile: {_last_line(output)}"
            return []
        return read_speedscope(json.loads(self.out.read_text()))


def _last_line(output: bytes) -> str:
    """py-spy's last non-empty line: its own words for what went wrong."""
    lines = [s for s in output.decode(errors="replace").splitlines() if s.strip()]
    return lines[-1] if lines else "no output"


def read_speedscope(doc: dict[str, Any]) -> list[Stack]:
    """Stacks of a py-spy speedscope document, one per distinct stack of each thread."""
    frames = [
        Frame(str(f.get("name", "")), str(f.get("file") or ""), int(f.get("line") or 0))
        for f in doc.get("shared", {}).get("frames", [])
    ]
    stacks: list[Stack] = []
    for profile in doc.get("profiles", []):
        found = PROFILE_NAME.search(str(profile.get("name", "")))
        pid = int(found.group(1) or found.group(2)) if found else 0
        thread = (found.group(3) or "") if found else ""
        if thread in SKIPPED_THREADS:
            continue
        samples = profile.get("samples", [])
        weights = profile.get("weights") or [1.0] * len(samples)
        for sample, weight in zip(samples, weights, strict=False):
            stack = tuple(frames[i] for i in sample if 0 <= i < len(frames))
            # py-spy puts "process PID:cmdline" pseudo-frames on top with --subprocesses
            stack = tuple(f for f in stack if not (not f.file and f.name.startswith("process ")))
            stacks.append(Stack(pid=pid, thread=thread, frames=stack, weight=float(weight)))
    return stacks
