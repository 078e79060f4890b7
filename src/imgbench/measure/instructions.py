"""Instructions per image under valgrind's callgrind: a measure the host's neighbours cannot move.

Wall time on this VM moves 1.3-1.85x with the host's other tenants (``imgbench.measure.host``);
the instructions a decode executes do not: 8 separate processes decoding 20 JPEGs with Pillow
agreed within 0.0045% (coefficient of variation), and 10% more work read as 1.09997.

With ``--imgbench-measure=instructions`` the session's worker server runs under
``valgrind --tool=callgrind --instr-atstart=no`` (so nothing is counted until a case asks) with
``CODSPEED_ENV=1``, and each case, after its untimed preparation and warm-up, counts one pass
over its items through pytest-codspeed's instrument hooks (the client requests CodSpeed's own
simulation mode uses): zero the counters, start instrumentation, run, stop, dump the counts
under the case's name. The dump's ``totals:`` line is callgrind's documented summary of the
events; the cache simulator's misses give the usual cycle estimate (Ir + 10 L1 misses + 100 LL
misses), recorded as information, not gated.

Cases whose work is not in this process's instructions say why and stay wall-time: loaders
(worker processes and threads), library-default threads (a thread pool's spinning is counted,
its parallelism is not), reads from disk or a cold cache (the kernel's work is invisible).
"""

from __future__ import annotations

import gc
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from imgbench.measure.case import Case, Workload

VALGRIND_PACKAGE = "valgrind"  # Debian package (the Makefile's apt step installs it)
OUT_PREFIX = "callgrind"


def valgrind_missing() -> str | None:
    """Why instruction counts cannot be taken here, or None."""
    if shutil.which("valgrind") is None:
        return f"valgrind is not installed (apt-get install {VALGRIND_PACKAGE})"
    try:
        from pytest_codspeed.instruments.hooks import InstrumentHooks  # noqa: F401
    except ImportError:
        return "pytest-codspeed is not installed (pip install pytest-codspeed)"
    return None


# glibc's memcpy copies large blocks with `rep movsb`, which callgrind counts once per byte moved,
# or with a vector loop (one instruction per 32 bytes), and picks between them by the distance of
# source and destination: where the allocator put a buffer decided a byte read's count (an LMDB
# read measured 55.7k or 62.6k instructions per image in separate processes of the same code).
# Pinning the vector loop takes the allocator's layout out of the count.
COUNTED_TUNABLES = (
    "glibc.cpu.x86_rep_movsb_threshold=4294967295",
    "glibc.cpu.x86_rep_stosb_threshold=4294967295",
)


def counted_tunables(existing: str | None) -> str:
    """GLIBC_TUNABLES for a process under callgrind: the user's, plus the vector copy loops."""
    return ":".join([*filter(None, [existing]), *COUNTED_TUNABLES])


def valgrind_command(out_dir: Path) -> list[str]:
    """The prefix that runs the worker server under callgrind, counting nothing until asked."""
    return [
        "valgrind",
        "--tool=callgrind",
        "--instr-atstart=no",
        "--cache-sim=yes",
        "--dump-instr=no",
        "--compress-strings=no",
        f"--callgrind-out-file={out_dir / OUT_PREFIX}.%p",
        "--quiet",
    ]


def unsupported(case: Case) -> str | None:
    """Why this case's work is not the instructions of its process, or None when it is."""
    if case.uncountable:
        return case.uncountable
    if case.services:
        return (
            f"talks to a session service ({', '.join(case.services)}) over the network: the "
            "server's and the kernel's work is invisible to callgrind"
        )
    params = case.params
    if params.get("mode") == "write":
        return "writes to disk: the kernel's work is invisible to callgrind"
    if params.get("mode") == "disk" or params.get("cache_state") == "cold":
        return "reads from disk: the kernel's work is invisible to callgrind"
    if case.threads != 1:
        return (
            "library-default threads: callgrind serialises threads and counts a pool's spinning, "
            "so only threads=1 cases are counted"
        )
    return None


@dataclass(frozen=True)
class Counts:
    instructions: int
    estimated_cycles: int | None  # Ir + 10 * L1 misses + 100 * last-level misses


def parse_dump(path: Path) -> Counts:
    """The ``events:`` and ``totals:`` lines of a callgrind dump."""
    events: list[str] = []
    totals: list[int] = []
    for line in path.read_text(errors="replace").splitlines():
        if line.startswith("events:"):
            events = line.split()[1:]
        elif line.startswith("totals:"):
            totals = [int(v) for v in line.split()[1:]]
    if not events or not totals:
        raise RuntimeError(f"{path}: not a callgrind dump (no events/totals line)")
    # the format lets trailing zero counts be left out
    padded = totals + [0] * max(0, len(events) - len(totals))
    value = dict(zip(events, padded[: len(events)], strict=True))
    cycles = None
    if "I1mr" in value:
        l1 = value.get("I1mr", 0) + value.get("D1mr", 0) + value.get("D1mw", 0)
        ll = value.get("ILmr", 0) + value.get("DLmr", 0) + value.get("DLmw", 0)
        cycles = value["Ir"] + 10 * l1 + 100 * ll
    return Counts(instructions=value["Ir"], estimated_cycles=cycles)


def count_pass(workload: Workload, out_dir: Path, name: str) -> Counts:
    """Count one pass over the workload's items; must run in a process under callgrind."""
    from pytest_codspeed.instruments.hooks import InstrumentHooks

    hooks: Any = InstrumentHooks()
    if not hooks.is_instrumented():
        raise RuntimeError("not running under valgrind: start the worker server under callgrind")
    pattern = f"{OUT_PREFIX}.{os.getpid()}.*"  # numbered dumps; the base file is for exit
    before = set(out_dir.glob(pattern))
    fn = workload.fn
    if workload.before_round is not None:
        workload.before_round()
    # as pytest-codspeed does: a collection that falls inside a short pass (a few thousand
    # instructions per image for a byte read) would be counted as the case's work, and when it
    # falls depends on everything allocated before
    collecting = gc.isenabled()
    gc.collect()
    gc.disable()
    hooks.disable_callgrind_markers()
    hooks.start_benchmark()
    hooks.callgrind_start_instrumentation()
    try:
        for item in workload.items:
            fn(item)
    finally:
        hooks.callgrind_stop_instrumentation()
        hooks.stop_benchmark()
        hooks.set_executed_benchmark(name.encode("ascii", "replace").decode("ascii"))
        if collecting:
            gc.enable()
    (dump,) = set(out_dir.glob(pattern)) - before
    counts = parse_dump(dump)
    dump.unlink(missing_ok=True)
    return counts
