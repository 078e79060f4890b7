"""What `imgbench run` says before it measures anything: its sessions, their cases, the
environments it builds, and an estimate of the time it takes.

The estimate sums the cases' expected wall times: each case's last row on this machine
(``machine_id``, ``case_id``, ``wall_s`` in the results folder), else the median of this machine's
rows of the same stage, else a per-stage default; plus a fixed start-up per session (an
interpreter, pytest, the worker server). It is labelled as an estimate wherever it is shown.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from imgbench.profiles import Profile, ProfileChoice
from imgbench.sessions import Session

# Seconds per case where this machine has no row of it nor of its stage: about what a
# default run (650 cases, 25-40 min) spends per case on a 2-core machine, by stage.
STAGE_DEFAULT_S = {"read": 1.5, "augment": 1.5, "format": 4.0, "loader": 6.0}
FALLBACK_S = 5.0  # a stage not listed above (a plugin's)
SESSION_START_S = 8.0  # interpreter, pytest's collection, the worker server's imports
HISTORY_FILES = 60  # the newest parquet files read for the estimate (a default run writes ~15)


@dataclass(frozen=True)
class SessionPlan:
    """One session as the plan line shows it: its label, its cases' stages and expected time."""

    label: str
    environment: str
    cases: int
    stages: tuple[str, ...]
    expected_s: float


@dataclass(frozen=True)
class RunPlan:
    sessions: tuple[SessionPlan, ...]
    to_build: tuple[str, ...]  # isolated environments this run builds first
    source: str  # where the per-case figures came from, in words
    keyword: str | None = None
    per_case: dict[str, float] = field(default_factory=dict, compare=False)
    final: bool = False  # the main session's best loader rows meet in imgbench.final after

    @property
    def expected_s(self) -> float:
        return sum(s.expected_s for s in self.sessions)

    def lines(self) -> list[str]:
        """The plan in a few lines: counts, the sessions, the environments, the estimate."""
        n = len(self.sessions)
        cases = sum(s.cases for s in self.sessions)
        narrowed = ""
        if self.keyword:
            narrowed = (
                f" (-k {self.keyword!r})"
                if keyword_filter(self.keyword) is not None
                else f" (before -k {self.keyword!r} narrows them)"
            )
        lines = [f"plan: {n} pytest session{'s' * (n != 1)}, {cases} cases{narrowed}"]
        for k, s in enumerate(self.sessions, 1):
            stages = ", ".join(s.stages) or "-"
            lines.append(
                f"  {k:>2}. {s.label:<34} {s.cases:>4} cases  ({stages})  ~{duration(s.expected_s)}"
            )
        if self.final:
            lines.append(
                "  then the final: the best loader configurations head to head (imgbench.final; "
                "not in the estimate)"
            )
        if self.to_build:
            lines.append(
                f"  first builds the {', '.join(self.to_build)} environment"
                f"{'s' * (len(self.to_build) != 1)} (a few minutes, once)"
            )
        bound = "at most " if self.keyword and keyword_filter(self.keyword) is None else ""
        lines.append(
            f"estimate: {bound}~{duration(self.expected_s)} ({self.source}; an estimate, "
            "not a promise)"
        )
        return lines


def duration(seconds: float) -> str:
    """``42s``, ``7m05s``, ``1h12m``."""
    s = max(0, round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


def session_label(session: Session) -> str:
    """``main``, ``main on photos``, ``main, allocator jemalloc``, ``main, disk hdd``."""
    label = session.environment
    if session.dataset is not None and session.secondary:
        label += f" on {session.dataset}"
    if session.allocator is not None:
        label += f", allocator {session.allocator}"
    if session.disk is not None:
        label += f", disk {'real' if session.disk == 'none' else session.disk}"
    return label


def _stage_of(bench: Path) -> str | None:
    from imgbench.stages import STAGES

    return next((s.name for s in STAGES if Path(s.bench).name == bench.name), None)


def keyword_filter(keyword: str | None) -> Callable[[str, str], bool] | None:
    """Whether a case (its stage, its test id) is selected by a pytest ``-k`` expression, as
    pytest matches it against the test's names (``test_read[ID]``, ``bench_readers.py``,
    ``benches``, the ``imgbench`` mark): case-insensitive substrings. None where there is no
    expression or pytest's parser refuses it (the plan then counts every case, and says so)."""
    if not keyword:
        return None
    try:
        from _pytest.mark.expression import Expression  # what pytest's own -k uses

        expression = Expression.compile(keyword)
    except Exception:
        return None
    from imgbench.stages import get_stage

    def selected(stage: str, test_id: str) -> bool:
        bench = Path(get_stage(stage).bench).name
        function = f"test_{stage}"  # benches/bench_*.py: one test function per stage
        names = [f"{function}[{test_id}]", bench, "benches", "imgbench", function]

        def matcher(subname: str, /, **_kwargs: object) -> bool:
            return any(subname.lower() in name.lower() for name in names)

        return bool(expression.evaluate(matcher))

    return selected


def session_case_ids(
    profile: Profile, session: Session, keyword: str | None = None
) -> list[tuple[str, str]]:
    """(stage, case id) of the cases a session runs of its environment, those ``-k keyword``
    selects where pytest's parser reads it."""
    from imgbench.disks.catalog import DISK_PASS
    from imgbench.measure.case import with_allocator
    from imgbench.stages import STAGES, stage_cases

    choice = ProfileChoice(
        profile.name,
        extra_dataset=session.secondary,
        allocator_session=session.allocator is not None,
        disk_session=session.disk or "",
    )
    resolved = choice.resolve()
    selected = keyword_filter(keyword)
    stages: list[str] = []
    for target in session.bench_targets:
        if target.is_dir() or target.name == "benches":
            stages += [s.name for s in STAGES]
        elif (stage := _stage_of(target)) is not None:
            stages.append(stage)
    found = []
    for stage in dict.fromkeys(stages):
        cases = [c for c in stage_cases(stage, resolved) if c.environment == session.environment]
        if selected is not None:
            cases = [c for c in cases if selected(stage, c.test_id)]
        if session.disk is not None:
            cases = [replace(c, params={**c.params, DISK_PASS: session.disk}) for c in cases]
        if session.allocator is not None:
            cases = with_allocator(cases, session.allocator)
        found += [(stage, c.case_id) for c in cases]
    return found


def history(results: str, machine_id: str) -> dict[str, float]:
    """The last ``wall_s`` of each case on this machine, from a local results folder; empty
    where there is none or it cannot be read (a remote one is not read for an estimate)."""
    import pandas as pd

    from imgbench.results.location import is_remote

    if is_remote(results) or not Path(results).is_dir():
        return {}
    frames = []
    newest = sorted(Path(results).glob("*.parquet"), key=lambda p: p.stat().st_mtime)
    for path in newest[-HISTORY_FILES:]:
        try:
            frame = pd.read_parquet(
                path, columns=["machine_id", "case_id", "stage", "wall_s", "created_utc"]
            )
        except Exception:  # an old or foreign file: the estimate does without it
            continue
        frames.append(frame[frame["machine_id"] == machine_id])
    if not frames:
        return {}
    rows = pd.concat(frames).dropna(subset=["wall_s"]).sort_values("created_utc")
    last = rows.groupby("case_id")["wall_s"].last()
    figures = {str(k): float(v) for k, v in last.items()}
    for stage, wall in rows.groupby("stage")["wall_s"].median().items():
        figures[f"stage:{stage}"] = float(wall)
    return figures


def make_plan(
    sessions: Sequence[Session],
    profile: Profile,
    results: str,
    *,
    keyword: str | None = None,
    to_build: Sequence[str] = (),
    machine_id: str | None = None,
    measure: str = "wall",
) -> RunPlan:
    """The run's plan and estimate (``machine_id``: this machine's, found when not given)."""
    if machine_id is None:
        from imgbench.machine import machine_info

        machine_id = machine_info().machine_id
    try:
        past = history(results, machine_id)
    except Exception:  # an estimate never stops a run
        past = {}
    known = 0
    plans = []
    per_case: dict[str, float] = {}
    for session in sessions:
        try:
            cases = session_case_ids(profile, session, keyword)
        except Exception:  # a plugin stage that cannot list its cases here: counted as none
            cases = []
        expected = SESSION_START_S
        for stage, case_id in cases:
            if case_id in past:
                known += 1
                wall = past[case_id]
            else:
                wall = past.get(f"stage:{stage}", STAGE_DEFAULT_S.get(stage, FALLBACK_S))
            per_case[case_id] = wall
            expected += wall
        stages = tuple(dict.fromkeys(stage for stage, _ in cases))
        plans.append(
            SessionPlan(session_label(session), session.environment, len(cases), stages, expected)
        )
    total = sum(p.cases for p in plans)
    if known:
        source = f"{known} of {total} cases from this machine's last rows, the rest by stage"
    elif past:
        source = "this machine's earlier rows, by stage"
    else:
        source = "no earlier rows on this machine: per-stage defaults"
    final = measure == "wall" and any(
        s.environment == "main"
        and not s.secondary
        and s.allocator is None
        and s.disk is None
        and "loader" in p.stages
        for s, p in zip(sessions, plans, strict=True)
    )
    return RunPlan(tuple(plans), tuple(to_build), source, keyword, per_case, final)
