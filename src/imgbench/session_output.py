"""What a bench session says beyond pytest's own output (hooks registered by the plugin):

- its progress, for `imgbench run`'s one progress line (imgbench.progress): a line ``total N``
  when collected and ``done NODEID`` per finished test, appended to the file named by
  ``IMGBENCH_PROGRESS_FILE`` when the run set it;
- each skipped case once, by its case id under its reason in imgbench's summary: pytest's short
  summary (``-ra``) would list them again by the line of the plugin that called ``pytest.skip``,
  so it leaves them to imgbench's (where a session also skipped a test of its own, pytest still
  lists every skip, each case by its id).
"""

from __future__ import annotations

import os
from collections.abc import Generator
from typing import Any, cast

import pytest

PROGRESS_ENV = "IMGBENCH_PROGRESS_FILE"  # imgbench.progress.PROGRESS_ENV
SKIPPED_KEY = pytest.StashKey[dict[str, tuple[str, str]]]()  # node id -> (case id, reason)
SKIPPED_SHOWN = 8  # case ids listed under one reason; the rest are in the rows


def progress(line: str) -> None:
    """One line to the run's progress file; one that cannot be written costs the progress
    line, never the session."""
    path = os.environ.get(PROGRESS_ENV)
    if not path:
        return
    try:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(line + "\n")
    except OSError:
        pass


def skip_reason(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    text = str(longrepr[2]) if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
    return text.removeprefix("Skipped: ").strip()


def with_skipped_cases(lines: list[str], config: pytest.Config, run_id: str) -> list[str]:
    """imgbench's summary lines, each ``  skipped xN: REASON`` followed by the ids of the
    cases skipped for it."""
    skipped = config.stash.get(SKIPPED_KEY, {})
    out = []
    for line in lines:
        out.append(line)
        if not line.startswith("  skipped x"):
            continue
        reason = line.split(": ", 1)[1]
        ids = [case_id for case_id, why in skipped.values() if why == reason]
        out += [f"    {case_id}" for case_id in ids[:SKIPPED_SHOWN]]
        if len(ids) > SKIPPED_SHOWN:
            out.append(
                f"    ... and {len(ids) - SKIPPED_SHOWN} more: imgbench results show {run_id}"
            )
    return out


class SessionOutput:
    """The hooks (registered by imgbench.pytest_plugin's pytest_configure)."""

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        progress(f"total {len(session.items)}")

    def pytest_runtest_logfinish(self, nodeid: str) -> None:
        progress(f"done {nodeid}")

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        callspec = getattr(item, "callspec", None)
        case_id = (
            getattr(callspec.params.get("imgbench_case"), "case_id", None) if callspec else None
        )
        if case_id is not None and report.skipped:
            item.config.stash.setdefault(SKIPPED_KEY, {})[item.nodeid] = (
                str(case_id),
                skip_reason(report),
            )
            longrepr = report.longrepr
            if isinstance(longrepr, tuple) and len(longrepr) == 3:
                # pytest folds a skip without a line number as "SKIPPED [1] PATH: reason" (its
                # own module-level skips); its annotation asks for a line number
                report.longrepr = cast(Any, (str(case_id), None, longrepr[2]))
        return report

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: Any, config: pytest.Config) -> None:
        skipped = terminalreporter.stats.get("skipped", [])
        mine = config.stash.get(SKIPPED_KEY, {})
        if skipped and all(getattr(r, "nodeid", None) in mine for r in skipped):
            terminalreporter.reportchars = terminalreporter.reportchars.replace("s", "")
