"""One progress line for a whole `imgbench run`: session k of n, cases done, elapsed, time left.

The sessions are separate pytest processes: each appends a line per finished case to the file
named by ``IMGBENCH_PROGRESS_FILE`` (imgbench.pytest_plugin), and the run reads it. In a terminal
the line is a live ``rich`` bar under the sessions' own output (which the run passes through);
elsewhere (a CI log) the run prints one plain line as each session starts, and nothing else.
"""

from __future__ import annotations

import time
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TextColumn
from rich.text import Text

from imgbench.run_plan import RunPlan, duration

PROGRESS_ENV = "IMGBENCH_PROGRESS_FILE"


def read_progress(path: Path) -> tuple[int | None, int]:
    """(cases the session collected, or None before it has; cases finished) from its file."""
    try:
        text = path.read_text()
    except OSError:
        return None, 0
    total: int | None = None
    done = 0
    for line in text.splitlines():
        if line.startswith("total "):
            total = int(line.split()[1])
        elif line.startswith("done "):
            done += 1
    return total, done


class RunProgress:
    """The run's progress, told to ``console``: live in a terminal, a line per session else."""

    def __init__(self, plan: RunPlan, console: Console, *, live: bool | None = None) -> None:
        self.plan = plan
        self.console = console
        self.live = console.is_terminal if live is None else live
        self.started = time.monotonic()
        self._k = 0
        self._file: Path | None = None
        self._total = 0
        self._done = 0
        self._done_before = 0  # cases finished in earlier sessions
        self._expected_before = 0.0  # those sessions' expected seconds
        self._totals = [s.cases for s in plan.sessions]  # as planned, then as collected
        self._bar: Progress | None = None
        self._task: TaskID | None = None

    @property
    def total_cases(self) -> int:
        return sum(self._totals)

    def left_s(self) -> float:
        """Seconds left: the expected time of what is left, scaled by how the run compares
        with its estimate so far (within 0.5x-3x)."""
        sessions = self.plan.sessions
        if not sessions:
            return 0.0
        k = max(self._k, 1)
        current = sessions[k - 1]
        share = min(1.0, self._done / self._total) if self._total else 0.0
        left = current.expected_s * (1 - share) + sum(s.expected_s for s in sessions[k:])
        expected_so_far = self._expected_before + current.expected_s * share
        elapsed = time.monotonic() - self.started
        if expected_so_far > 30 and elapsed > 30:
            left *= min(3.0, max(0.5, elapsed / expected_so_far))
        return left

    def describe(self) -> str:
        n = len(self.plan.sessions)
        elapsed = time.monotonic() - self.started
        label = self.plan.sessions[self._k - 1].label if 0 < self._k <= n else ""
        return (
            f"session {self._k} of {n} ({label}): {self._done}/{self._total} cases; "
            f"all {self._done_before + self._done}/{self.total_cases}; "
            f"elapsed {duration(elapsed)}, ~{duration(self.left_s())} left (estimate)"
        )

    def start_session(self, k: int, progress_file: Path) -> None:
        """Session ``k`` (from 1) starts; it reports its cases to ``progress_file``."""
        if self._k:
            self._read()  # the session that ended: its last cases (no tick reads it off a terminal)
            self._done_before += self._done
            self._expected_before += self.plan.sessions[self._k - 1].expected_s
        self._k, self._file, self._done = k, progress_file, 0
        self._total = self.plan.sessions[k - 1].cases
        if not self.live:
            self.console.print(self.describe(), highlight=False, soft_wrap=True)
            return
        if self._bar is None:
            self._bar = Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(bar_width=24),
                TextColumn("{task.fields[info]}"),
                console=self.console,
                transient=True,
            )
            self._task = self._bar.add_task("", total=self.total_cases, info="")
            self._bar.start()
        self.tick()

    def _read(self) -> None:
        if self._file is not None:
            total, done = read_progress(self._file)
            if total is not None:
                self._total = self._totals[self._k - 1] = total
            self._done = done

    def tick(self) -> None:
        """Read the session's file and redraw the line."""
        self._read()
        if self._bar is not None and self._task is not None:
            n = len(self.plan.sessions)
            elapsed = time.monotonic() - self.started
            self._bar.update(
                self._task,
                description=f"session {self._k}/{n}",
                completed=self._done_before + self._done,
                total=self.total_cases,
                info=(
                    f"{self.plan.sessions[self._k - 1].label}: {self._done}/{self._total} cases "
                    f"· elapsed {duration(elapsed)} · ~{duration(self.left_s())} left (estimate)"
                ),
            )

    def output(self, line: str) -> None:
        """A line of a session's own output, printed above the live line."""
        self.console.print(Text.from_ansi(line.rstrip("\n")), highlight=False, soft_wrap=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
        if self._k:
            elapsed = time.monotonic() - self.started
            self.console.print(
                f"{len(self.plan.sessions)} session(s) done in {duration(elapsed)} "
                f"(estimated ~{duration(self.plan.expected_s)})",
                highlight=False,
            )
