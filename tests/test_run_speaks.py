"""`imgbench run` says what it will do, how far along it is, and ends with its answer; its
sessions print no warning a user cannot act on, and a skipped case once (the issue "The run
speaks"). Real runs: a one-session quick run of a few reader cases, with and without a
terminal, and the shared quick run's rows for the answer."""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
from typer.testing import CliRunner

from imgbench.cli import app
from imgbench.profiles import get_profile
from imgbench.progress import PROGRESS_ENV, read_progress
from imgbench.run_answer import MAX_LINES, more_line, run_answer_lines
from imgbench.run_plan import make_plan
from imgbench.session_output import PROGRESS_ENV as PLUGIN_PROGRESS_ENV
from imgbench.sessions import plan_sessions
from tests.shared_runs import SessionRun

REPO = Path(__file__).resolve().parents[1]
# pillow and simplejpeg on JPEG and PNG: simplejpeg skips PNG (a skipped row with its reason)
K = "read and (pillow or simplejpeg)"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\r")


def _run_args(dataset: Path, results: Path) -> list[str]:
    return [
        str(Path(sys.executable).with_name("imgbench")),
        "run",
        "--profile=quick",
        "--no-envs",
        f"--dataset={dataset}",
        f"--results={results}",
        "--name=speaks",
        "-k",
        K,
        "--",
        "--imgbench-process=in-process",
        "--imgbench-set=max_images=4",
        "--imgbench-rounds=2",
    ]


def _env() -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
    }


def _skipped_case(results: Path) -> str:
    rows = pd.concat(pd.read_parquet(p) for p in results.glob("*.parquet"))
    skipped = rows[rows["status"] == "skipped"]
    assert len(skipped) >= 1, rows[["case_id", "status", "reason"]]
    assert (rows["status"] == "ok").any(), rows[["case_id", "status", "reason"]]
    return str(skipped["case_id"].iloc[0])


def test_a_run_without_a_terminal_plans_first_then_a_line_per_session_and_ends_with_more(
    tmp_path: Path, tiny_dataset: Path
) -> None:
    results = tmp_path / "results"
    proc = subprocess.run(
        _run_args(tiny_dataset, results),
        cwd=tmp_path,  # pytest-benchmark's .benchmarks/ goes there
        env=_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    out = proc.stdout
    assert proc.returncode == 0, out[-3000:] + proc.stderr[-3000:]
    lines = out.splitlines()
    # the plan first: sessions, cases, and the estimate, labelled as one
    assert lines[0] == f"plan: 1 pytest session, 4 cases (-k {K!r})", lines[:5]
    assert re.match(r"\s+1\. main\s+4 cases\s+\(read\)", lines[1]), lines[:5]
    assert lines[2].startswith("estimate: ~") and "an estimate" in lines[2], lines[:5]
    # no terminal: one progress line per session, before the session's own output
    session_lines = [line for line in lines if line.startswith("session 1 of 1 (main)")]
    assert len(session_lines) == 1, out[-3000:]
    assert "left (estimate)" in session_lines[0]
    assert lines.index(session_lines[0]) < next(i for i, s in enumerate(lines) if "$ " in s)
    # no bar drawn into a log
    assert "━" not in out
    # ends with the answer as the report words it (here: none without loader rows, and what
    # to run), then the commands that show more
    assert lines[-2].startswith("**No answer: no loader rows"), lines[-6:]
    # (the run's command as it was run: the venv's, not on PATH here)
    assert lines[-1] == more_line(_run_args(tiny_dataset, results)[0])
    # no warning a user cannot act on; a skipped case listed once, by its id
    assert "PytestBenchmarkWarning" not in out + proc.stderr
    assert "not used at all" not in out
    skipped = _skipped_case(results)
    assert out.count(skipped) == 1, out[-3000:]
    assert "pytest_plugin.py:" not in out


def test_a_run_in_a_terminal_shows_one_live_progress_line(
    tmp_path: Path, tiny_dataset: Path
) -> None:
    results = tmp_path / "results"
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        _run_args(tiny_dataset, results),
        cwd=tmp_path,  # pytest-benchmark's .benchmarks/ goes there
        env={**_env(), "TERM": "xterm-256color", "COLUMNS": "160"},
        stdin=slave,
        stdout=slave,
        stderr=slave,
        close_fds=True,
    )
    os.close(slave)
    chunks = []
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        try:
            data = os.read(master, 65536)
        except OSError:  # the child closed the terminal (EIO)
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    code = proc.wait(timeout=60)
    out = ANSI.sub("", b"".join(chunks).decode(errors="replace"))
    assert code == 0, out[-3000:]
    assert out.lstrip().startswith("plan: 1 pytest session"), out[:500]
    # the live line: session k/n, cases done of the session's, elapsed, time left
    assert re.search(r"session 1/1 .*main: 4/4 cases · elapsed \S+ · ~\S+ left", out), out
    # the session's own output passes through above it
    assert "imgbench results (" in out
    assert "PytestBenchmarkWarning" not in out
    assert "1 session(s) done in" in out


def test_the_progress_file_names_the_environment_the_plugin_writes() -> None:
    assert PROGRESS_ENV == PLUGIN_PROGRESS_ENV


def test_progress_file_is_read_as_total_and_cases_done(tmp_path: Path) -> None:
    path = tmp_path / "p.txt"
    assert read_progress(path) == (None, 0)
    path.write_text("total 5\ndone a\ndone b\n")
    assert read_progress(path) == (5, 2)


def test_the_estimate_uses_this_machine_s_last_rows(tmp_path: Path) -> None:
    profile = get_profile("quick")
    sessions = plan_sessions(profile, REPO / "benches", "quick", with_environments=False)
    before = make_plan(sessions, profile, str(tmp_path), machine_id="m1")
    assert "per-stage defaults" in before.source
    case_id = next(iter(before.per_case))
    rows = pd.DataFrame(
        {
            "machine_id": ["m1", "m2"],
            "case_id": [case_id, case_id],
            "stage": ["read", "read"],
            "wall_s": [100.0, 1.0],
            "created_utc": pd.to_datetime(["2026-01-01", "2026-01-02"], utc=True),
        }
    )
    rows.to_parquet(tmp_path / "old.parquet")
    after = make_plan(sessions, profile, str(tmp_path), machine_id="m1")
    assert after.per_case[case_id] == 100.0
    assert "1 of" in after.source and "last rows" in after.source
    assert after.lines()[-1].startswith("estimate: ~")


def test_the_answer_lines_are_the_report_s_markdown(quick_session: SessionRun) -> None:
    frame = quick_session.frame()
    group = str(frame["run_group"].iloc[0])
    lines = run_answer_lines(str(quick_session.results), group)
    assert lines, quick_session.output
    # the whole quick matrix's session (every stage, ok, skipped and failed rows) warns nothing
    assert "PytestBenchmarkWarning" not in quick_session.output
    markdown = CliRunner().invoke(
        app, ["report", "--markdown", "--results", str(quick_session.results), group]
    )
    assert markdown.exit_code == 0, markdown.output
    report_lines = markdown.output.splitlines()
    sections = [s for s in "\n".join(lines).split("\n\n") if s.strip()]
    for section in sections:
        shown = section.splitlines()
        assert len(shown) <= MAX_LINES
        assert shown[0].startswith("### ")
        # the same lines, in the same order, as the report's section of that answer
        start = report_lines.index(shown[0])
        assert report_lines[start : start + 1] == shown[:1]
        assert all(line in report_lines for line in shown), shown
    # the pick: the report's bold headline is among the lines shown
    headlines = [line for line in report_lines if line.startswith("**")]
    assert headlines and headlines[0] in lines


def test_the_default_plan_names_every_session_and_what_it_builds(tmp_path: Path) -> None:
    profile = get_profile("default")
    sessions = plan_sessions(profile, REPO / "benches", "default")
    plan = make_plan(sessions, profile, str(tmp_path), to_build=["mxnet"], machine_id="m")
    lines = plan.lines()
    assert lines[0].startswith(f"plan: {len(sessions)} pytest sessions, ")
    listed = lines[1 : 1 + len(sessions)]
    assert [line.split(". ", 1)[0].strip() for line in listed] == [
        str(k) for k in range(1, len(sessions) + 1)
    ]
    assert any("allocator" in line for line in listed) and any(" on " in line for line in listed)
    assert all(s.cases > 0 for s in plan.sessions), lines
    assert "first builds the mxnet environment" in lines[-2]
    assert lines[-1].startswith("estimate: ~") and "an estimate" in lines[-1]


def test_a_session_s_output_and_ticks_reach_the_run(tmp_path: Path) -> None:
    from imgbench.sessions import run_session

    seen: list[str] = []
    ticks: list[int] = []
    code = run_session(
        [
            sys.executable,
            "-c",
            "import sys, time; print('one'); time.sleep(0.3); "
            "print('two', file=sys.stderr); sys.exit(1)",
        ],
        dict(os.environ),
        on_line=seen.append,
        on_tick=lambda: ticks.append(1),
        tick_s=0.05,
    )
    assert code == 1
    assert [line.strip() for line in seen] == ["one", "two"]
    assert len(ticks) >= 2


def test_without_a_terminal_the_progress_is_a_line_per_session(tmp_path: Path) -> None:
    import io

    from rich.console import Console

    from imgbench.progress import RunProgress

    profile = get_profile("default")
    sessions = plan_sessions(profile, REPO / "benches", "default")[:2]
    plan = make_plan(sessions, profile, str(tmp_path), machine_id="m")
    buffer = io.StringIO()
    progress = RunProgress(plan, Console(file=buffer, width=200))
    assert not progress.live
    for k in (1, 2):
        file = tmp_path / f"{k}.txt"
        file.write_text("total 3\ndone a\n")
        progress.start_session(k, file)  # no tick without a terminal: the run calls none
    progress.close()
    lines = buffer.getvalue().splitlines()
    assert lines[0].startswith(f"session 1 of 2 ({plan.sessions[0].label}): 0/")
    assert lines[1].startswith(f"session 2 of 2 ({plan.sessions[1].label}): 0/")
    assert "all 1/" in lines[1]  # the first session's finished case counted
    assert lines[2].startswith("2 session(s) done in ")
