"""The pytest plugin (entry point ``pytest11``): hooks only.

Options become one :class:`~imgbench.measure.settings.Settings`; each bench module's cases are
parametrized from its stage; the ``imgbench`` fixture hands a case to the session's
:class:`~imgbench.measure.manager.Manager` and maps its outcome to pytest's (a skip, a failure,
or samples handed to pytest-benchmark through :mod:`imgbench.benchmark_shim`); every case's row
(ok, skipped or failed) goes atomically to ``results/RUN.parquet`` after it: an interrupted session
keeps every finished case."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Generator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest

from imgbench import session_output as out
from imgbench.benchmark_shim import claim, quiet_empty_save, record_samples
from imgbench.controls import DatasetPathError, session_dataset
from imgbench.disks.disk import DiskUnavailableError
from imgbench.disks.records import cleanup_leftovers
from imgbench.disks.session import DiskSession
from imgbench.envs import unmeasured_reason
from imgbench.errors import one_line
from imgbench.machine import machine_info as imgbench_machine
from imgbench.measure.case import Case
from imgbench.measure.manager import Failed, Manager, Skipped
from imgbench.measure.reference import session_reference
from imgbench.measure.rounds import Measurement
from imgbench.measure.rows import RunHeader, case_listing, case_row, new_run_id, summary_lines
from imgbench.measure.settings import Settings, SettingsError
from imgbench.profiles import Profile, ProfileChoice, ProfileError
from imgbench.pytest_options import add_options, settings_from
from imgbench.results.location import ResultsLocation, ResultsLocationError, results_location
from imgbench.results.store import rows_table
from imgbench.stages import STAGES, planner, profile_imports, worker_preload

# Set by `imgbench run` so that its sessions (environments, datasets) share one group id.
RUN_GROUP_ENV = "IMGBENCH_RUN_GROUP"

CASE_KEY = pytest.StashKey[Case]()
OUTCOME_KEY = pytest.StashKey[Measurement | Skipped | Failed]()
START_KEY = pytest.StashKey[float]()
RECORDED_KEY = pytest.StashKey[bool]()


@dataclass
class SessionState:
    """One pytest session's run: its manager (which holds the settings) and its rows."""

    manager: Manager
    profile: Profile
    results: ResultsLocation  # a folder or an s3:// prefix (imgbench.results.location)
    run: RunHeader
    environment: str
    rows: list[dict[str, Any]] = field(default_factory=list)
    # cases left to their own environment's session, by environment: counted, never a row
    elsewhere: dict[str, int] = field(default_factory=dict)
    # isolated environments not built here that this profile's `imgbench run` would not build:
    # their cases are skipped rows with this reason (environment -> reason)
    unbuilt: dict[str, str] = field(default_factory=dict)
    disk: DiskSession | None = None  # --imgbench-disk: the emulated disk holding the dataset
    disk_unavailable: str | None = None  # why it could not be set up: every case skips with it

    @property
    def settings(self) -> Settings:
        return self.manager.settings

    def record(self, row: dict[str, Any]) -> None:
        self.rows.append(row)
        try:
            self.results.write_table(f"{self.run.run_id}.parquet", rows_table(self.rows))
        except ResultsLocationError as exc:
            pytest.exit(f"imgbench: {exc}", returncode=3)


STATE_KEY = pytest.StashKey[SessionState]()


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "imgbench(stage): the module's cases come from this imgbench stage"
    )
    choice = ProfileChoice(
        config.getoption("imgbench_profile"),
        extra_dataset=bool(config.getoption("imgbench_secondary")),
        allocator_session=bool(config.getoption("imgbench_allocator_session")),
        disk_session=(config.getoption("imgbench_disk") or "none")
        if config.getoption("imgbench_disk_session")
        else "",
    )
    try:
        profile = choice.resolve()
        settings = settings_from(config, profile)
    except (ProfileError, SettingsError) as exc:
        raise pytest.UsageError(f"imgbench: {exc}") from None
    try:
        dataset = session_dataset(config.getoption("imgbench_dataset"), profile)
    except DatasetPathError as exc:
        raise pytest.UsageError(f"imgbench: {exc}") from None
    try:
        results = results_location(config.getoption("imgbench_results"))
        if results.remote:
            results.check()
    except ResultsLocationError as exc:
        raise pytest.UsageError(f"imgbench: {exc}") from None
    save_name = config.getoption("benchmark_save", None)
    run_id = new_run_id(save_name)
    config.stash[STATE_KEY] = SessionState(
        manager=Manager(settings, planner(choice, profile), dataset),
        profile=profile,
        results=results,
        run=RunHeader(run_id, save_name, os.environ.get(RUN_GROUP_ENV) or run_id),
        environment=config.getoption("imgbench_env"),
    )
    cleanup_leftovers()  # emulated disks of killed runs (cheap: a folder listing)
    config.pluginmanager.register(out.SessionOutput(), "imgbench-session-output")
    if settings.disk_profile != "none":
        _open_disk(config.stash[STATE_KEY])


def _open_disk(state: SessionState) -> None:
    """The dataset onto the emulated disk, before any worker server starts (it inherits the
    throttling); where that cannot work, every case skips with the one-line reason."""
    disk = DiskSession(state.settings.disk_profile, state.manager.dataset)
    try:
        state.manager.dataset = disk.open()
    except Exception as exc:  # DiskUnavailableError, a dataset that does not load, a failed copy
        why = str(exc) if isinstance(exc, DiskUnavailableError) else one_line(exc)
        state.disk_unavailable = f"emulated disk {disk.profile.name} unavailable: {why}"
        return
    state.disk = disk


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "imgbench_case" not in metafunc.fixturenames:
        return
    marker = metafunc.definition.get_closest_marker("imgbench")
    if marker is None:
        raise pytest.UsageError(
            f"{metafunc.definition.nodeid}: mark the module with pytest.mark.imgbench(stage=...)"
        )
    stage = marker.kwargs.get("stage") or marker.args[0]
    if stage not in {s.name for s in STAGES}:
        raise pytest.UsageError(
            f"{metafunc.definition.nodeid}: unknown imgbench stage {stage!r}; "
            f"known: {[s.name for s in STAGES]}"
        )
    state = metafunc.config.stash[STATE_KEY]
    # A session runs its own environment's cases; the others are counted, not written as skipped
    # rows (their environment's session measures them), unless no session will (unmeasured_reason)
    kept = []
    for case in state.manager.planner.cases(stage, state.settings):
        if case.environment == state.environment:
            kept.append(case)
        elif reason := unmeasured_reason(
            case.environment, state.environment, state.profile.environments
        ):
            state.unbuilt[case.environment] = reason
            kept.append(case)
        else:
            state.elsewhere[case.environment] = state.elsewhere.get(case.environment, 0) + 1
    metafunc.parametrize("imgbench_case", kept, ids=[c.test_id for c in kept])


class Harness:
    """The ``imgbench`` fixture: ``imgbench.measure(case)`` times a case and records its row."""

    def __init__(self, item: pytest.Item, benchmark: Any, state: SessionState) -> None:
        self._item = item
        self._benchmark = benchmark
        self._state = state

    def measure(self, case: Case) -> Measurement:
        state = self._state
        self._item.stash[CASE_KEY] = case
        if case.environment in state.unbuilt:  # no session measures it: a skipped row
            pytest.skip(state.unbuilt[case.environment])
        if case.environment != state.environment:
            self._item.stash[RECORDED_KEY] = True  # its own environment's session writes its row
            state.elsewhere[case.environment] = state.elsewhere.get(case.environment, 0) + 1
            pytest.skip(
                f"runs in the {case.environment} environment: `imgbench env create "
                f"{case.environment}`, then `imgbench run --env {case.environment}`"
            )
        if state.disk_unavailable is not None:
            pytest.skip(state.disk_unavailable)
        outcome = state.manager.measure(case)
        self._item.stash[OUTCOME_KEY] = outcome
        if isinstance(outcome, Skipped):
            pytest.skip(outcome.reason)
        if isinstance(outcome, Failed):
            pytest.fail(outcome.reason, pytrace=False)
        record_samples(self._benchmark, case, outcome)
        return outcome


@pytest.fixture
def imgbench(request: pytest.FixtureRequest, benchmark: Any) -> Harness:
    claim(benchmark)  # imgbench's engine times the case; its samples are handed over after
    return Harness(request.node, benchmark, request.config.stash[STATE_KEY])


def pytest_runtest_setup(item: pytest.Item) -> None:
    item.stash[START_KEY] = time.perf_counter()
    if (case := _case_of(item)) is not None:
        item.stash[CASE_KEY] = case


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, Any, None]:
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    case = item.stash.get(CASE_KEY, None)
    if case is None or item.stash.get(RECORDED_KEY, False):
        return
    if item.config.getoption("benchmark_disable", False):
        return  # a correctness run: nothing was timed, so nothing is recorded
    if not (report.when == "call" or (report.when == "setup" and not report.passed)):
        return
    state = item.config.stash[STATE_KEY]
    measured = item.stash.get(OUTCOME_KEY, None)
    measurement = measured if isinstance(measured, Measurement) else None
    if report.skipped:
        status, reason = "skipped", out.skip_reason(report)
    elif isinstance(measured, Failed):
        status, reason = "failed", measured.reason
    elif report.failed:
        status, reason = "failed", one_line(call.excinfo.value) if call.excinfo else "failed"
    elif measurement is None:
        status, reason = "failed", "the bench passed without calling imgbench.measure(case)"
    else:
        status, reason = "ok", None
    ctx = state.manager.loaded_context
    row = case_row(
        state.run,
        case_listing(item.nodeid, case),
        case,
        measurement if status == "ok" else None,
        status,
        reason,
        wall_s=time.perf_counter() - item.stash.get(START_KEY, time.perf_counter()),
        dataset=ctx.dataset if ctx is not None else state.manager.dataset,
        columns=measured.columns if measured is not None else None,
        settings=state.settings,
    )
    item.stash[RECORDED_KEY] = True
    state.record(row)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``--imgbench-select FILE``: only the listed tests run; the others are deselected."""
    path = config.getoption("imgbench_select", None)
    if not path:
        return
    wanted = {line.strip() for line in Path(path).read_text().splitlines() if line.strip()}
    deselected = [item for item in items if item.nodeid not in wanted]
    if deselected:
        config.hook.pytest_deselected(items=deselected)
    items[:] = [item for item in items if item.nodeid in wanted]


def _case_of(item: pytest.Item) -> Case | None:
    callspec = getattr(item, "callspec", None)
    case = callspec.params.get("imgbench_case") if callspec is not None else None
    return case if isinstance(case, Case) else None


def pytest_collection_finish(session: pytest.Session) -> None:
    """The worker server's imports: what every case of the profile needs (wall time), or only
    the selected cases' (instruction counts: torch alone costs a minute under callgrind, and a
    count does not depend on the heap layout)."""
    state = session.config.stash.get(STATE_KEY, None)
    if state is None:
        return
    required: set[str] = set()
    listing = []
    for item in session.items:
        if (case := _case_of(item)) is not None:
            if case.environment not in state.unbuilt:  # skipped rows: nothing to import
                required.update(case.requires)
            listing.append(case_listing(item.nodeid, case))
    if state.settings.worker_imports == "profile":
        required.update(profile_imports(state.profile, state.environment))
    state.manager.preload = worker_preload(required)
    quiet_empty_save(session.config, session.items)  # every case deselected: say nothing
    opts = session.config.option  # the machine's reference, before any case (measure/reference)
    if session.items and not (opts.collectonly or getattr(opts, "benchmark_disable", False)):
        state.run = replace(state.run, reference=session_reference(state.settings.measure))
    out = session.config.getoption("imgbench_list_cases", None)
    if out:
        from imgbench.atomic import atomic_file

        with atomic_file(Path(out), "w") as handle:
            json.dump(listing, handle)


def _close(state: SessionState) -> None:
    state.manager.close()
    if state.disk is not None:  # after the server stopped: nothing holds the mount
        state.disk.close()
        state.disk = None


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """The session's shared inputs end with it; what it built on disk is removed."""
    if (state := session.config.stash.get(STATE_KEY, None)) is not None:
        _close(state)


def pytest_unconfigure(config: pytest.Config) -> None:
    """The emulated disk goes even when the session did not finish (a usage error, a crash)."""
    if (state := config.stash.get(STATE_KEY, None)) is not None and state.disk is not None:
        _close(state)


def pytest_benchmark_update_machine_info(config: pytest.Config, machine_info: dict) -> None:
    machine_info["imgbench"] = imgbench_machine().as_row()


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    state = config.stash.get(STATE_KEY, None)
    if state is None or not (state.rows or state.elsewhere):
        return
    terminalreporter.write_sep("-", "imgbench")
    for environment, n in sorted(state.elsewhere.items()):
        terminalreporter.write_line(
            f"{n} cases run in the {environment} environment, not this {state.environment} "
            f"session (no rows here): `imgbench run --env {environment}`"
        )
    if state.rows:
        ctx = state.manager.loaded_context
        dataset = ctx.dataset if ctx is not None else None
        lines = summary_lines(
            state.rows, dataset, str(state.results.path_of(f"{state.run.run_id}.parquet"))
        )
        for line in out.with_skipped_cases(lines, config, state.run.run_id):
            terminalreporter.write_line(line)
