"""Each case measured in a fresh worker process, as pyperf splits runner and worker.

The manager (:mod:`imgbench.measure.manager`, in the runner: a pytest session, ``imgbench
profile`` or a script) plans cases and writes rows. A *server* process starts once
per session with a controlled environment (the allocator setting, ``PYTHONHASHSEED``), imports
the libraries every case of the profile requires (the runner's ``preload``: ``preload_modules``) and
then never runs a case itself: for each case it forks a child, which unpickles the job the server
only copied (``JobInbox``), plans the case again with the job's planner, prepares, warms up, calibrates and times
it, and hands back a :class:`~imgbench.measure.rounds.Measurement`. Every case therefore starts
from the same process state, a copy of the pristine server, whatever ran before it: no heap, no
allocator high-water mark, no imported-late module carries over from case to case, and a case
that built the session's shared inputs is measured again in a fresh fork (the plugin).

Forking costs milliseconds where a fresh interpreter would re-import torch for every case;
what cases share (reference decodes, decoded inputs, built formats) lives in the session's
scratch folder, built by the first worker that needs it.
"""

from __future__ import annotations

import contextlib
import ctypes
import math
import os
import pickle
import select
import signal
import struct
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from imgbench.errors import one_line
from imgbench.measure.allocator import Allocator, environment_for, settle_glibc
from imgbench.measure.errors import CaseFailed, Skip
from imgbench.measure.layout import LAYOUT_ENV, run_under
from imgbench.measure.planner import Planner
from imgbench.measure.settings import Settings

# Imported by the server before any fork, besides the modules the session's cases require (their
# ``requires``): what every case uses. Modules that are not safe to fork after import are never
# preloaded (pyvips: its thread pool deadlocks in a forked child); their cases import them.
# The runner's ``preload`` comes after these, in its order (the stage registry's modules first:
# ``imgbench.stages.worker_preload``).
CORE_PRELOAD = ("numpy", "PIL.Image", "imgbench.measure.rounds")
FORK_UNSAFE = frozenset({"pyvips"})
# Modules whose import initialises the CUDA driver: a process forked after that has no CUDA
# ("CUDA driver initialization failed" in the child, on the H100: docs/gpu.md), so the server
# never preloads them and a GPU machine's forked rows keep CUDA; their cases import them.
CUDA_AT_IMPORT = frozenset({"nvidia.nvimgcodec"})
HASH_SEED = "0"
_DATASETS: dict[str, Any] = {}  # loaded by the server before any fork (0.5 s each, not per case)
CASE_TIMEOUT_S = 3600.0  # a case that has not finished by then is killed with its worker
_HEADER = struct.Struct("!I")


@dataclass(frozen=True)
class WorkerJob:
    """What a worker needs to rebuild and measure one case: names, paths and the session's
    settings, nothing open."""

    settings: Settings
    planner: Planner  # the worker plans the case again from it, as the runner did
    dataset: str
    stage: str
    case_id: str
    scratch: str
    result_path: str
    host_reference_s: float = math.inf  # the session's fastest host probe so far
    # a case measured in several processes: this one's bytes of heap held before anything else
    # (its own layout), and the first process's passes per round (so that rounds pool)
    heap_offset: int = 0
    round_repeats: int | None = None
    # handles of the session services the case needs (started by the runner, picklable)
    services: Mapping[str, Any] = field(default_factory=dict)


@dataclass
class WorkerOutcome:
    status: str  # ok | skipped | failed
    reason: str | None = None
    measurement: Any = None  # a Measurement when ok
    # files this process added to the session's scratch folder (shared inputs it built first)
    built: tuple[str, ...] = ()


def scratch_files(scratch: Path) -> set[str]:
    """The files under the session's scratch folder, relative to it."""
    found: set[str] = set()
    for folder, _, names in os.walk(scratch):
        base = Path(folder).relative_to(scratch)
        found.update(str(base / name) for name in names)
    return found


# -- the worker side -------------------------------------------------------------------------------
def run_job(job: WorkerJob) -> WorkerOutcome:
    """In the forked child: rebuild the case from its id, measure it, report what happened."""
    from imgbench.datasets import load_dataset
    from imgbench.measure.allocator import current
    from imgbench.measure.context import CaseContext
    from imgbench.measure.layout import current as current_layout
    from imgbench.measure.rounds import run_case

    settings = job.settings
    try:
        planned = job.planner.cases(job.stage, settings)
        cases = {c.case_id: c for c in planned}
        case = cases.get(job.case_id)
        if case is None:
            return WorkerOutcome("failed", f"the worker does not plan {job.case_id}")
        ctx = CaseContext(
            dataset=_DATASETS.get(job.dataset) or load_dataset(job.dataset),
            settings=settings,
            plans=job.planner.plans,
            services=dict(job.services),
            _scratch=Path(job.scratch),
        )
        gate = settings.host_gate()
        gate.reference_s = job.host_reference_s
        before = scratch_files(Path(job.scratch))
        measurement = run_case(
            case,
            ctx,
            gate,
            instructions_dir=(
                Path(job.scratch) / "callgrind" if settings.measure == "instructions" else None
            ),
            fixed_repeats=job.round_repeats,
        )
    except Skip as exc:
        return WorkerOutcome("skipped", exc.reason)
    except CaseFailed as exc:
        return WorkerOutcome("failed", exc.reason)
    except Exception as exc:
        return WorkerOutcome("failed", one_line(exc))
    measurement.process_model = "worker"
    measurement.allocator = current()
    built = scratch_files(Path(job.scratch)) - before
    measurement.address_layout = current_layout()
    measurement.worker_imports = settings.worker_imports
    return WorkerOutcome("ok", measurement=measurement, built=tuple(sorted(built)))


class JobInbox:
    """The server's reads of each job into buffers allocated once, before the first fork.

    A job unpickled in the server would leave its objects (and the holes of the jobs before it)
    in the heap every later case is forked with: the cases that ran before would move the heap
    layout a case inherits, and with it the speed of a decode (docs/measuring.md, "One process
    is one layout"). So the server only copies a job's bytes into the same buffer, and the
    forked child unpickles them: the server's heap is the same at every fork.
    """

    MAX_JOB_BYTES = 1 << 20  # a pickled job is about 2 KB

    def __init__(self, stream: IO[bytes]) -> None:
        self.stream = stream
        self._header = memoryview(bytearray(_HEADER.size))
        self._payload = memoryview(bytearray(self.MAX_JOB_BYTES))
        self.size = 0

    def _fill(self, view: memoryview) -> bool:
        done = 0
        while done < len(view):
            got = self.stream.readinto(view[done:])  # type: ignore[attr-defined]
            if not got:
                return False
            done += got
        return True

    def next(self) -> bool:
        """Read the next job's bytes; False at the end of input."""
        if not self._fill(self._header):
            return False
        (self.size,) = _HEADER.unpack(self._header)
        if self.size > self.MAX_JOB_BYTES:
            raise ValueError(f"a job of {self.size} bytes; the inbox holds {self.MAX_JOB_BYTES}")
        return self._fill(self._payload[: self.size])

    def job(self) -> Any:
        """In the forked child: the job the server last read."""
        return pickle.loads(self._payload[: self.size])


HEAP_OFFSET_STEP = 1088  # bytes: process k of a case holds k of them (a cache line past 1 KiB)
_HELD: list[int] = []


def hold_heap_offset(size: int) -> None:
    """Allocate ``size`` bytes and never free them, before the case allocates anything: every
    later heap block of this process lands elsewhere, relative to the buffers it inherited, so
    each of a case's processes draws another heap layout (a fork alone would copy the first)."""
    libc = ctypes.CDLL(None)
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    _HELD.append(libc.malloc(size))


def _child(inbox: JobInbox) -> None:
    """The forked child: read the job, run it, write the outcome, and leave without running
    atexit."""
    code = 0
    # the server's SIGTERM handler ends the whole group; a case's own processes (DataLoader
    # workers, which torch may terminate) must not inherit it
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        job: WorkerJob = inbox.job()
        if job.heap_offset > 0:
            hold_heap_offset(job.heap_offset)
        os.dup2(
            2, 1
        )  # the server's stdout is the runner's channel: a library's print goes to stderr
        outcome = run_job(job)
        with tempfile.NamedTemporaryFile(
            dir=Path(job.result_path).parent, delete=False, suffix=".tmp"
        ) as handle:
            pickle.dump(outcome, handle, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(handle.name, job.result_path)
    except BaseException:
        code = 3
    finally:
        os._exit(code)


def _read_message(stream: IO[bytes]) -> Any:
    header = stream.read(_HEADER.size)
    if len(header) < _HEADER.size:
        return None
    (size,) = _HEADER.unpack(header)
    return pickle.loads(stream.read(size))


def _write_message(stream: IO[bytes], value: Any) -> None:
    data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_HEADER.pack(len(data)) + data)
    stream.flush()


PR_SET_PDEATHSIG = 1  # prctl(2)
RUNNER_PID_ENV = "IMGBENCH_RUNNER_PID"  # the server's parent, to notice one that died early
# The environment the session started with. Modules the runner imports later change os.environ
# (importing cv2 sets LD_LIBRARY_PATH), so a server started after a suite's collection had 77 bytes
# more environment than one started for a case alone; the environment sits at the top of the
# stack, and a few bytes of layout move a decode between two speeds (docs/measuring.md).
LAUNCH_ENVIRON = dict(os.environ)


def _end_group(*_: object) -> None:
    os.killpg(os.getpgrp(), signal.SIGKILL)


def _die_with_runner() -> None:
    """A runner killed without stopping its server (SIGKILL, or SIGTERM to pytest, whose default
    is to die at once) must not leave the server, or the case it is running, behind: the kernel
    sends the server SIGTERM when the runner dies, and the server then ends its process group
    (its own session: the case's fork and every process the case started)."""
    signal.signal(signal.SIGTERM, _end_group)
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    runner = os.environ.get(RUNNER_PID_ENV)
    if runner and os.getppid() != int(runner):  # it died before the line above
        _end_group()


def serve(dataset: str | None = None, preload: tuple[str, ...] = ()) -> None:
    """The server: import the preloads and load the dataset once, then fork a child per job
    until stdin closes."""

    if os.environ.get(LAYOUT_ENV):
        run_under(os.environ[LAYOUT_ENV])  # re-executes this command line when it must change
    _die_with_runner()

    preload_imports(preload)
    if dataset:
        from imgbench.datasets import load_dataset

        with contextlib.suppress(Exception):  # the case that needs it reports the error
            _DATASETS[dataset] = load_dataset(dataset)
            from imgbench.datasets.sample_pool import order_populations

            # the cases' samples are drawn from this order (a second per million images)
            order_populations(_DATASETS[dataset].manifest.entries)
    inbox, replies = JobInbox(sys.stdin.buffer), sys.stdout.buffer
    settle_glibc()  # the children's allocator state, whatever the imports above left
    while inbox.next():
        pid = os.fork()
        if pid == 0:
            _child(inbox)
        _, status = os.waitpid(pid, 0)
        _write_message(replies, status)


def preload_imports(required: tuple[str, ...]) -> None:
    """What the server imports before its first fork (:func:`preload_modules`)."""
    import importlib

    for module in preload_modules(required):
        with contextlib.suppress(Exception):  # a missing library's cases skip with the reason
            importlib.import_module(module)


def preload_modules(required: tuple[str, ...]) -> list[str]:
    """What the server imports: the core, then the runner's preload in its order, less what
    does not survive a fork or would start CUDA before the forked children."""
    extra = [m for m in dict.fromkeys(required) if fork_safe(m) and m not in CORE_PRELOAD]
    return [*CORE_PRELOAD, *extra]


def fork_safe(module: str) -> bool:
    """``module`` may be imported before a fork: not fork-unsafe, and it starts no CUDA."""
    if module.split(".")[0] in FORK_UNSAFE:
        return False
    return not any(module == m or module.startswith(m + ".") for m in CUDA_AT_IMPORT)


# -- the runner side -------------------------------------------------------------------------------
class WorkerServer:
    """The session's server process: started on first use, stopped with the session."""

    def __init__(
        self,
        allocator: Allocator,
        dataset: str | None = None,
        callgrind_dir: Path | None = None,
        preload: tuple[str, ...] = (),
        address_layout: str = "fixed",
    ) -> None:
        self.allocator = allocator
        self.address_layout = address_layout  # imgbench.measure.layout; not under callgrind
        self.dataset = dataset
        self.preload = preload  # modules the session's cases require
        self.callgrind_dir = callgrind_dir  # set: the server runs under callgrind, counting
        self._process: subprocess.Popen[bytes] | None = None

    def _start(self) -> subprocess.Popen[bytes]:
        if self._process is None or self._process.poll() is not None:
            env = environment_for(dict(LAUNCH_ENVIRON), self.allocator)
            env["PYTHONHASHSEED"] = HASH_SEED
            env[RUNNER_PID_ENV] = f"{os.getpid():010d}"  # one length whatever the pid
            env.pop(LAYOUT_ENV, None)
            # names the test that happened to start the server: its length would move the
            # server's stack, and with it every fork's, by what ran first
            env.pop("PYTEST_CURRENT_TEST", None)
            prefix: list[str] = []
            if self.callgrind_dir is not None:
                from imgbench.measure.instructions import counted_tunables, valgrind_command

                self.callgrind_dir.mkdir(parents=True, exist_ok=True)
                prefix = valgrind_command(self.callgrind_dir)
                env["CODSPEED_ENV"] = "1"  # pytest-codspeed's hooks refuse to load without it
                env["GLIBC_TUNABLES"] = counted_tunables(env.get("GLIBC_TUNABLES"))
            else:  # valgrind places its client itself, and a re-exec would leave it uncounted
                env[LAYOUT_ENV] = self.address_layout
            self._process = subprocess.Popen(
                [
                    *prefix,
                    sys.executable,
                    "-c",
                    "import sys; from imgbench.measure.server import serve; "
                    "serve(sys.argv[1], tuple(filter(None, sys.argv[2].split(','))))",
                    self.dataset or "",
                    ",".join(self.preload),
                ],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                env=env,
                start_new_session=True,  # stop() ends the server and any child it left
            )
        return self._process

    def run(self, job: WorkerJob, timeout_s: float = CASE_TIMEOUT_S) -> WorkerOutcome:
        """Measure one case in a fresh fork; a crash or a hang is a failed outcome, not an error."""
        process = self._start()
        assert process.stdin is not None and process.stdout is not None
        result = Path(job.result_path)
        result.unlink(missing_ok=True)
        try:
            _write_message(process.stdin, job)
        except BrokenPipeError:
            self.stop()
            return WorkerOutcome("failed", "the worker server died before the case started")
        ready, _, _ = select.select([process.stdout], [], [], timeout_s)
        if not ready:
            self.stop()
            return WorkerOutcome("failed", f"the case did not finish within {timeout_s:g} s")
        status = _read_message(process.stdout)
        if status is None:
            self.stop()
            return WorkerOutcome("failed", "the worker server died during the case")
        if not result.is_file():
            return WorkerOutcome(
                "failed", f"the worker process ended without a result ({_how(status)})"
            )
        with result.open("rb") as handle:
            outcome: WorkerOutcome = pickle.load(handle)
        result.unlink(missing_ok=True)
        return outcome

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        with contextlib.suppress(Exception):
            assert process.stdin is not None
            process.stdin.close()  # the server's loop ends on end of input
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)


def _how(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"killed by signal {signal.Signals(os.WTERMSIG(status)).name}"
    return f"exit code {os.WEXITSTATUS(status)}"
