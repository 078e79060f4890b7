"""What one `imgbench run` executes: a pytest session per environment and dataset.

A profile's matrix spans the main environment, the isolated ones (pillow-simd, TensorFlow, Mosaic,
AlbumentationsX, ...: each runs only its own cases, those whose registry entry, or whose loader
pipeline's decoder or augmentation, lives there) and, for the stages marked ``extra_datasets``
(readers, loaders), extra datasets so that every codec and the whole pipeline are measured on
real photos (with the profile's ``extra_dataset_plans`` there; an isolated env with no case there
gets no session on them).
A profile's ``disks`` add, after those, a session on each emulated disk and one on the real
disk, running its ``disk_plans`` (cold reads of the same sample on both: docs/disks.md).
Each session writes its own parquet file; they share the run name.
"""

from __future__ import annotations

import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from imgbench.profiles import Profile


@dataclass(frozen=True)
class Session:
    environment: str
    dataset: str | None  # None: the profile's dataset
    bench_targets: tuple[Path, ...]  # benches/ or bench files
    save_name: str
    secondary: bool = False  # one of the profile's extra datasets
    allocator: str | None = (
        None  # an allocator session: the profile's allocator_plans, this allocator
    )
    measure: str = (
        "wall"  # or "instructions": counted under callgrind (imgbench.measure.instructions)
    )
    # a disk session: the profile's disk_plans on this disk (imgbench.disks.catalog;
    # ``none``: the real disk's pass)
    disk: str | None = None

    def process_env(self, base: dict[str, str]) -> dict[str, str]:
        """The session process's environment: an allocator session runs under its allocator, so
        the loaders (measured in the session's process) and their workers use it too."""
        if self.allocator is None:
            return base
        from imgbench.measure.allocator import AllocatorUnavailableError, allocator, environment_for

        try:
            return environment_for(base, allocator(self.allocator))
        except AllocatorUnavailableError:
            return base  # its cases are skipped with the package to install

    @property
    def bench_target(self) -> Path:
        return self.bench_targets[0]

    def args(
        self, python: str, profile: Profile, results: Path | str, keyword: str | None
    ) -> list[str]:
        args = [
            python,
            "-m",
            "pytest",
            *(str(t) for t in self.bench_targets),
            f"--imgbench-env={self.environment}",
            f"--imgbench-profile={profile.name}",
            f"--imgbench-results={results}",
            f"--benchmark-save={self.save_name}",
            "-p",
            "no:cacheprovider",
        ]
        if self.dataset:
            args.append(f"--dataset={self.dataset}")
        if self.secondary:
            args.append("--imgbench-secondary")
        if self.allocator:
            args += [f"--imgbench-allocator={self.allocator}", "--imgbench-allocator-session"]
        if self.disk is not None:
            args += [f"--imgbench-disk={self.disk}", "--imgbench-disk-session"]
        if self.measure != "wall":
            args.append(f"--imgbench-measure={self.measure}")
        if keyword:
            args += ["-k", keyword]
        return args


def plan_sessions(
    profile: Profile,
    benches: Path,
    name: str,
    dataset: str | None = None,
    environment: str | None = None,
    with_environments: bool = True,
    measure: str = "wall",
    with_disks: bool = True,
) -> list[Session]:
    """Sessions in order: main first, then each isolated environment; primary dataset first;
    then the allocator sessions and the disk sessions (``with_disks``: off where the whole run
    is on an emulated disk already).

    Counting instructions runs the main environment's sessions only, without allocator sessions:
    an instruction count does not depend on the allocator's page faults, and the isolated
    environments do not carry valgrind's hooks.
    """
    if measure != "wall":
        main = plan_sessions(profile, benches, name, dataset, "main", False, with_disks=False)
        return [replace(s, measure=measure) for s in main if s.allocator is None]
    if environment is not None:
        environments = [environment]
    else:
        environments = ["main", *(profile.environments if with_environments else ())]
    targets: list[tuple[str | None, tuple[Path, ...]]] = [(dataset, (benches,))]
    if dataset is None:
        from imgbench.stages import STAGES

        extra_benches = tuple(benches / Path(s.bench).name for s in STAGES if s.extra_datasets)
        targets += [(extra, extra_benches) for extra in profile.extra_datasets]
    sessions = [
        session
        for env in environments
        for session in _environment_sessions(profile, env, name, dataset, targets)
    ]
    if "main" in environments:
        sessions += _allocator_sessions(profile, benches, name, dataset)
    if "main" in environments and with_disks:
        sessions += disk_sessions(profile, benches, name, dataset)
    return sessions


def _environment_sessions(
    profile: Profile,
    env: str,
    name: str,
    dataset: str | None,
    targets: list[tuple[str | None, tuple[Path, ...]]],
) -> list[Session]:
    """An environment's sessions: the primary dataset, then each extra dataset it has cases on."""
    on_extra = env == "main" or len(targets) == 1 or _runs_on_extra_datasets(profile, env)
    sessions = []
    for ds, target in targets:
        secondary = ds is not None and ds != dataset
        if secondary and not on_extra:
            continue  # e.g. albumentationsx: its loader pipeline is the synthetic set's only
        parts = [name]
        if env != "main":
            parts.append(env)
        if ds is not None and secondary:
            parts.append(ds)
        sessions.append(Session(env, ds, target, "-".join(parts), secondary))
    return sessions


def _allocator_sessions(
    profile: Profile, benches: Path, name: str, dataset: str | None
) -> list[Session]:
    """One main-environment session per allocator of the profile, over the stages it names."""
    from imgbench.stages import STAGES

    allocator_benches = tuple(
        benches / Path(s.bench).name for s in STAGES if s.name in profile.allocator_plans
    )
    return [
        Session("main", dataset, allocator_benches, f"{name}-allocator-{chosen}", allocator=chosen)
        for chosen in (profile.allocators if allocator_benches else ())
    ]


def disk_sessions(profile: Profile, benches: Path, name: str, dataset: str | None) -> list[Session]:
    """One session per emulated disk of the profile, then one on the real disk (``none``), each
    running the bench files of the stages its plans give cases (``disk_plans``, and on the real
    disk ``real_disk_plans``); none where the profile lists no disk."""
    from imgbench.stages import STAGES, stage_cases

    if not profile.disks:
        return []
    sessions = []
    for disk in dict.fromkeys([*(d for d in profile.disks if d != "none"), "none"]):
        plans = profile.in_disk_session(disk)
        targets = tuple(
            benches / Path(s.bench).name
            for s in STAGES
            if s.name in profile.disk_plans and stage_cases(s.name, plans)
        )
        label = f"{name}-disk-{'real' if disk == 'none' else disk}"
        if targets:
            sessions.append(Session("main", dataset, targets, label, disk=disk))
    return sessions


def _runs_on_extra_datasets(profile: Profile, environment: str) -> bool:
    """Whether an isolated env has cases in the stages run on the extra datasets (with their
    thinner plans): a session with none would start an interpreter to measure nothing."""
    from imgbench.stages import STAGES, stage_cases

    extra = profile.on_extra_dataset()
    return any(
        case.environment == environment
        for stage in STAGES
        if stage.extra_datasets
        for case in stage_cases(stage.name, extra)
    )


def combined_exit_code(codes: list[int]) -> int:
    """0 all well; 1 some cases failed (they are rows); anything else (interrupted, usage) wins."""
    serious = [c for c in codes if c not in (0, 1, 5)]
    if serious:
        return serious[0]
    return 1 if 1 in codes else 0


def python_for_environment(
    environment: str, *, create: bool, say: Callable[[str], object] = print
) -> str:
    """The interpreter of an environment; isolated ones are built on first use when ``create``.
    Raises RuntimeError naming the environment when there is none."""
    if environment == "main":
        return sys.executable
    from imgbench.envs import EnvError, create_env, python_for

    try:
        return str(python_for(environment))
    except EnvError as exc:
        if not create:
            raise RuntimeError(str(exc)) from None
    say(f"building the {environment} environment (a few minutes, once)")
    try:
        create_env(environment)
        return str(python_for(environment))
    except EnvError as exc:
        raise RuntimeError(str(exc)) from None


def build_missing_environments(
    environments: list[str], *, say: Callable[[str], object] = print
) -> dict[str, str]:
    """Build, all at once and before anything is measured, the isolated environments a run
    needs and lacks: their pip downloads, unpacking and pillow-simd's compile overlap (four on
    a fresh clone here: about 3 min one after another, docs/decisions.md gives the figure at
    once). Returns {environment: why it did not build}; the run goes on without those."""
    from concurrent.futures import ThreadPoolExecutor

    from imgbench.envs import EnvError, create_env, is_built

    missing = [e for e in dict.fromkeys(environments) if e != "main" and not is_built(e)]
    if not missing:
        return {}
    say(f"building the {', '.join(missing)} environments at once (a few minutes, once)")

    def build(name: str) -> str | None:
        def log(line: str) -> None:
            say(f"  {name}: {line}")

        try:
            create_env(name, log=log)
        except EnvError as exc:
            return str(exc)
        return None

    with ThreadPoolExecutor(max_workers=len(missing)) as pool:
        problems = dict(zip(missing, pool.map(build, missing), strict=True))
    return {name: why for name, why in problems.items() if why is not None}


def run_session(
    args: list[str],
    env: dict[str, str],
    *,
    on_line: Callable[[str], object] | None = None,
    on_tick: Callable[[], object] | None = None,
    tick_s: float = 0.5,
) -> int:
    """Run one session and return its exit code; a SIGTERM or SIGHUP sent to `imgbench run` is
    passed on to it (Ctrl-C reaches it anyway, in the terminal's foreground group), so stopping
    a run stops its session, whose worker server then ends with it (measure/server.py).

    With ``on_line`` the session's output (stdout and stderr) is read line by line and handed
    to it (the run's live progress line prints it above itself); ``on_tick`` is called every
    ``tick_s`` while the session runs."""
    piped = on_line is not None
    proc = subprocess.Popen(
        args,
        env=env,
        stdout=subprocess.PIPE if piped else None,
        stderr=subprocess.STDOUT if piped else None,
        text=piped,
        errors="replace" if piped else None,
    )

    def forward(signum: int, _frame: object) -> None:
        proc.send_signal(signum)

    previous = {sig: signal.signal(sig, forward) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        if not piped and on_tick is None:
            return proc.wait()
        return _watch(proc, on_line, on_tick, tick_s)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _watch(
    proc: subprocess.Popen[str],
    on_line: Callable[[str], object] | None,
    on_tick: Callable[[], object] | None,
    tick_s: float,
) -> int:
    """Wait for the session, handing its output lines on and ticking every ``tick_s``."""
    lines: queue.Queue[str | None] = queue.Queue()
    reader = threading.Thread(target=_pump, args=(proc, lines), daemon=True)
    if proc.stdout is not None:
        reader.start()
    while True:
        code = None
        try:
            code = proc.wait(timeout=tick_s)
        except subprocess.TimeoutExpired:
            pass
        except KeyboardInterrupt:  # Ctrl-C reached the session too: it stops and says so
            continue
        try:
            _drain(lines, on_line)
            if on_tick is not None:
                on_tick()
        except KeyboardInterrupt:
            pass
        if code is not None:
            if reader.is_alive():
                reader.join(timeout=5)
            _drain(lines, on_line)
            return code


def _pump(proc: subprocess.Popen[str], lines: queue.Queue[str | None]) -> None:
    assert proc.stdout is not None
    for line in proc.stdout:
        lines.put(line)
    lines.put(None)


def _drain(lines: queue.Queue[str | None], on_line: Callable[[str], object] | None) -> None:
    while True:
        try:
            line = lines.get_nowait()
        except queue.Empty:
            return
        if line is not None and on_line is not None:
            on_line(line)
