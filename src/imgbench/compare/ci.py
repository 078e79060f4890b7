"""``imgbench ci``: measure the base and the head commit in the same job, interleaved, then compare.

Each commit is checked out with ``git worktree`` into a temporary folder and run with the current
interpreter and ``PYTHONPATH`` pointed at that worktree's ``src``, so the code under test is the
commit's while the installed libraries are the job's. The profile's rounds are split over
``repeats`` alternating runs (base, head, head, base, ...): a slow spell of a shared runner then
lands on both sides instead of on one, which separate runs cannot give.

With ``measure="instructions"`` (the default) each side instead runs once with
``--imgbench-measure=instructions``: instruction counts under callgrind repeat within 0.02% here,
so one run a side decides, and the host's neighbours cannot raise an alarm. ``"both"`` adds the
interleaved wall-time runs, whose verdicts block only where their measured power at the threshold
reaches 95% (compare/power.py; on this VM about 1%, so they are advisory; docs/regression.md).
"""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from imgbench.controls import resolve as resolve_settings
from imgbench.profiles import get_profile

PYTEST_OK = (0, 1)  # 1: some cases failed; they are rows with status=failed, still results


class CIError(RuntimeError):
    """The base or head cannot be checked out or run (exit code 2)."""


@dataclass
class CIPlan:
    repo: Path
    base: str
    head: str
    profile: str = "quick"
    repeats: int = 10  # >= min_runs (8): the check tests run medians
    rounds: int | None = None  # total timed rounds per case and side; default: the profile's
    dataset: str | None = None
    keyword: str | None = None
    pytest_args: list[str] = field(default_factory=list)
    measure: str = "instructions"  # instructions | wall | both
    parallel_counts: bool = True  # count base and head at once (each on its own core)

    def rounds_per_repeat(self) -> int:
        total = self.rounds or resolve_settings(get_profile(self.profile), environ={}).rounds
        return max(1, math.ceil(total / self.repeats))


@dataclass
class CIRun:
    base_sha: str
    head_sha: str
    base_results: Path
    head_results: Path
    log: list[str]


def _git(repo: Path, *args: str) -> str:
    proc = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
    if proc.returncode != 0:
        raise CIError(f"git {' '.join(args)}: {(proc.stderr or proc.stdout).strip()}")
    return proc.stdout.strip()


def resolve(repo: Path, rev: str) -> str:
    try:
        return _git(repo, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
    except CIError:
        raise CIError(f"unknown revision {rev!r} in {repo}") from None


def _bench_command(
    plan: CIPlan, tree: Path, results: Path, storage: Path, counted: bool = False
) -> list[str]:
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        str(tree / "benches"),
        f"--imgbench-profile={plan.profile}",
        f"--imgbench-results={results}",
        f"--imgbench-rounds={plan.rounds_per_repeat()}",
        f"--benchmark-storage={storage}",
        "-p",
        "no:cacheprovider",
        "-q",
    ]
    if plan.dataset:
        cmd.append(f"--dataset={plan.dataset}")
    if counted:
        cmd.append("--imgbench-measure=instructions")
    if plan.keyword:
        cmd += ["-k", plan.keyword]
    return cmd + plan.pytest_args


def _side_env(tree: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(tree / "src"), *filter(None, [os.environ.get("PYTHONPATH")])]
    )
    env.setdefault("NO_ALBUMENTATIONS_UPDATE", "1")
    return env


def _start_side(
    plan: CIPlan, name: str, tree: Path, results: Path, workdir: Path, counted: bool = False
) -> tuple[str, list[str], subprocess.Popen[str]]:
    # each side keeps its own pytest-benchmark storage: two sides may run at once
    # and its output goes to a file, not a pipe one side could fill while the other is awaited
    cmd = _bench_command(plan, tree, results, workdir / f"benchmarks-{name}", counted)
    with open(workdir / f"{name}.log", "a") as log:
        proc = subprocess.Popen(
            cmd, cwd=tree, env=_side_env(tree), stdout=log, stderr=subprocess.STDOUT, text=True
        )
    return name, cmd, proc


def _finish_side(started: tuple[str, list[str], subprocess.Popen[str]], workdir: Path) -> str:
    name, cmd, proc = started
    try:
        proc.wait()
    finally:  # stopped while waiting (SIGTERM, Ctrl-C): the side stops too
        _stop(proc)
    if proc.returncode not in PYTEST_OK:
        output = (workdir / f"{name}.log").read_text(errors="replace")
        tail = output.strip().splitlines()[-15:]
        raise CIError(
            f"{name}: pytest exited {proc.returncode}: {' '.join(cmd)}\n" + "\n".join(tail)
        )
    return f"{name}: {' '.join(cmd)} -> exit {proc.returncode}"


def _stop(proc: subprocess.Popen[str]) -> None:
    """End a side that is still running; its worker server follows it (PR_SET_PDEATHSIG)."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _run_side(
    plan: CIPlan, name: str, tree: Path, results: Path, workdir: Path, counted: bool = False
) -> str:
    return _finish_side(_start_side(plan, name, tree, results, workdir, counted), workdir)


def _run_counted_sides(
    plan: CIPlan, trees: dict[str, Path], results: dict[str, Path], workdir: Path
) -> list[str]:
    """Both sides under callgrind, at the same time when there is a core for each.

    Instruction counts do not depend on what else the machine runs (an A/A' pair measured while
    other jobs ran differed by at most 0.3%), and valgrind runs a process on one core at a time,
    so two cores count base and head in about the time of one side.
    """
    if plan.parallel_counts and (os.cpu_count() or 1) >= 2:
        started = [
            _start_side(plan, name, trees[name], results[name], workdir, True)
            for name in ("base", "head")
        ]
        try:
            return [_finish_side(side, workdir) for side in started]
        finally:
            for _, _, proc in started:
                _stop(proc)
    return [_run_side(plan, n, trees[n], results[n], workdir, True) for n in ("base", "head")]


def _exit_on_sigterm(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)


def run_ci(plan: CIPlan, workdir: Path, echo: Callable[[str], None] = print) -> CIRun:
    """Check out both commits, run them alternately ``plan.repeats`` times, return the folders.

    A SIGTERM (a CI job's timeout) unwinds like Ctrl-C: the running sides are stopped and the
    worktrees removed, instead of pytest sessions left running without their parent.
    """
    if threading.current_thread() is not threading.main_thread():  # handlers are main-only
        return _run_ci(plan, workdir, echo)
    previous = signal.signal(signal.SIGTERM, _exit_on_sigterm)
    try:
        return _run_ci(plan, workdir, echo)
    finally:
        signal.signal(signal.SIGTERM, previous)


def _run_ci(plan: CIPlan, workdir: Path, echo: Callable[[str], None]) -> CIRun:
    base_sha, head_sha = resolve(plan.repo, plan.base), resolve(plan.repo, plan.head)
    trees = {"base": workdir / "base", "head": workdir / "head"}
    results = {"base": workdir / "results-base", "head": workdir / "results-head"}
    shas = {"base": base_sha, "head": head_sha}
    log: list[str] = []
    added: list[Path] = []
    try:
        for name, tree in trees.items():
            _git(plan.repo, "worktree", "add", "--detach", "--force", str(tree), shas[name])
            added.append(tree)
            echo(
                f"{name}: {plan.base if name == 'base' else plan.head} = {shas[name][:10]} in {tree}"
            )
        if plan.measure in ("instructions", "both"):
            # deterministic: one run a side decides
            echo("base and head: instruction counts under callgrind")
            log += _run_counted_sides(plan, trees, results, workdir)
        for i in range(plan.repeats if plan.measure in ("wall", "both") else 0):
            order = ("base", "head") if i % 2 == 0 else ("head", "base")
            for name in order:
                echo(f"repeat {i + 1}/{plan.repeats}: {name} ({plan.rounds_per_repeat()} rounds)")
                log.append(_run_side(plan, name, trees[name], results[name], workdir))
    finally:
        for tree in added:
            subprocess.run(
                ["git", "-C", str(plan.repo), "worktree", "remove", "--force", str(tree)],
                capture_output=True,
            )
        subprocess.run(["git", "-C", str(plan.repo), "worktree", "prune"], capture_output=True)
    return CIRun(base_sha, head_sha, results["base"], results["head"], log)
