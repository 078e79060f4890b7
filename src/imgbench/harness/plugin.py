"""The pytest plugin (entry point ``pytest11``): cases in, one parquet file per session out.

pytest-benchmark stays the front door: its flags, JSON and comparisons work unchanged. This
plugin adds the case parametrisation per profile, the ``imgbench`` fixture that times a case,
and a row per case (ok, skipped or failed) rewritten atomically to ``results/RUN.parquet`` after
every case, so an interrupted session still leaves every finished case readable.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Generator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest

from imgbench.errors import one_line
from imgbench.harness import instructions
from imgbench.harness.allocator import ALLOCATORS, AllocatorUnavailableError, allocator
from imgbench.harness.allocator import current as current_allocator
from imgbench.harness.case import Case, with_allocator
from imgbench.harness.context import CaseContext
from imgbench.harness.host import HostGate
from imgbench.harness.layout import LAYOUTS
from imgbench.harness.layout import current as current_layout
from imgbench.harness.measure import Measurement, measure, pool, record_samples
from imgbench.harness.row import measurement_columns, new_run_id, row_header
from imgbench.harness.services import Services, ServiceUnavailableError, row_columns
from imgbench.harness.worker import (
    HEAP_OFFSET_STEP,
    WORKER_IMPORTS,
    WORKER_IMPORTS_ENV,
    WorkerJob,
    WorkerServer,
    profile_imports,
)
from imgbench.machine import dist_version
from imgbench.paths import looks_like_path
from imgbench.profiles import Profile, ProfileError, get_profile
from imgbench.results.location import (
    ObjectPath,
    ResultsLocation,
    ResultsLocationError,
    results_location,
)
from imgbench.results.store import rows_table
from imgbench.stages import STAGES, get_stage, stage_cases

# Set by `imgbench run` so that its sessions (environments, datasets) share one group id.
RUN_GROUP_ENV = "IMGBENCH_RUN_GROUP"

CASE_KEY = pytest.StashKey[Case]()
MEASUREMENT_KEY = pytest.StashKey[Measurement]()
START_KEY = pytest.StashKey[float]()
RECORDED_KEY = pytest.StashKey[bool]()
COLUMNS_KEY = pytest.StashKey[dict[str, Any]]()  # row columns from the case's service handles


@dataclass
class SessionState:
    config: pytest.Config
    profile: Profile
    results: ResultsLocation  # a folder or an s3:// prefix (imgbench.results.location)
    dataset_spec: str | None
    rounds: int
    warmup_rounds: int
    max_images: int
    min_round_s: float
    min_case_s: float
    run_id: str
    run_name: str | None
    environment: str
    process_model: str  # worker | in-process
    allocator: str  # the worker processes' allocator setting (imgbench.harness.allocator)
    address_layout: str  # the worker server's address layout (imgbench.harness.layout)
    processes: int  # worker processes per case, their rounds pooled (imgbench.harness.measure.pool)
    host_gate: HostGate  # its reference is the fastest host probe seen this session
    measure: str = "wall"  # or "instructions": counted under callgrind in the worker server
    # profile | selected: which modules the worker server imports (imgbench.harness.worker)
    worker_imports: str = "profile"
    preload: tuple[str, ...] = ()  # the modules the worker server imports before it forks
    secondary: bool = False
    allocator_session: bool = False
    rows: list[dict[str, Any]] = field(default_factory=list)
    # cases left to their own environment's session, by environment: counted, never a row
    elsewhere: dict[str, int] = field(default_factory=dict)
    # isolated environments not built here, that this profile's `imgbench run` would not build:
    # their cases are skipped rows with this reason (environment -> reason)
    unbuilt: dict[str, str] = field(default_factory=dict)
    _context: CaseContext | None = None
    _dataset_error: str | None = None
    _server: WorkerServer | None = None
    # session services (an S3 server): started on the first case that needs one, stopped at the end
    services: Services = field(default_factory=Services)

    def uses_worker(self, case: Case) -> bool:
        """Worker processes rebuild a case from its registered stage; others run here."""
        if case.stage not in {s.name for s in STAGES} or not get_stage(case.stage).worker:
            return False
        return self.process_model == "worker" or self.measure == "instructions"

    def server(self) -> WorkerServer:
        """The session's worker server, started on first use with the chosen allocator."""
        if self._server is None:
            try:
                chosen = allocator(self.allocator)
            except AllocatorUnavailableError as exc:
                pytest.skip(str(exc))
            self._server = WorkerServer(
                chosen,
                self.dataset_spec or self.profile.dataset,
                callgrind_dir=(
                    self.context().scratch_dir() / "callgrind"
                    if self.measure == "instructions"
                    else None
                ),
                preload=self.preload,
                address_layout=self.address_layout,
            )
        return self._server

    def measure_in_workers(self, case: Case, ctx: CaseContext) -> Measurement:
        """The case in ``processes`` worker processes (one when counting instructions), each
        with its own heap offset; the first calibrates the rounds the others repeat."""
        job = self.job(case, ctx)
        processes = 1 if self.measure == "instructions" else max(1, self.processes)
        if processes > 1:
            job = replace(job, rounds=max(2, math.ceil(self.rounds / processes)))
        parts: list[Measurement] = []
        built: tuple[str, ...] = ()
        for index in range(processes):
            process_job = replace(
                job,
                heap_offset=index * HEAP_OFFSET_STEP,
                round_repeats=parts[0].round_repeats if parts else None,
            )
            outcome = self.server().run(process_job)
            if index == 0 and outcome.status == "ok" and outcome.built and self.measure == "wall":
                # it built the session's shared inputs (reference decodes, a store) before its
                # rounds, and a case after it would load them: measured again in a fresh fork,
                # its heap has the same history alone and inside the suite
                built = outcome.built
                outcome = self.server().run(process_job)
            if outcome.status == "skipped":
                pytest.skip(outcome.reason or "skipped in the worker")
            if outcome.status != "ok":
                reason = outcome.reason if index == 0 else f"process {index + 1}: {outcome.reason}"
                pytest.fail(self.failure_reason(case, reason), pytrace=False)
            if built:
                outcome.measurement.extra["measured_again_after_building"] = len(built)
            parts.append(outcome.measurement)
            self.host_gate.reference_s = min(
                self.host_gate.reference_s, outcome.measurement.host_reference_s
            )
        return pool(parts)

    def job(self, case: Case, ctx: CaseContext) -> WorkerJob:
        scratch = ctx.scratch_dir()
        services = {name: ctx.services[name] for name in case.services}
        return WorkerJob(
            profile=self.profile.name,
            secondary=self.secondary,
            allocator_session=self.allocator_session,
            allocator=self.allocator,
            dataset=self.dataset_spec or self.profile.dataset,
            max_images=self.max_images,
            stage=case.stage,
            case_id=case.case_id,
            rounds=self.rounds,
            warmup_rounds=self.warmup_rounds,
            min_round_s=self.min_round_s,
            min_case_s=self.min_case_s,
            worker_imports=self.worker_imports,
            host_gate=self.host_gate,
            scratch=str(scratch),
            result_path=str(scratch / "worker-result.pickle"),
            measure=self.measure,
            services=services,
        )

    def acquire_services(self, case: Case, item: pytest.Item) -> dict[str, Any]:
        """The handles of the services the case needs; a skip or a failure with the reason."""
        if not case.services:
            return {}
        try:
            handles = self.services.handles(case.services)
        except ServiceUnavailableError as exc:
            pytest.skip(str(exc))
        except Exception as exc:  # failed to start, or lost earlier in the session
            item.stash[COLUMNS_KEY] = row_columns(self.services.last_handles(case.services))
            pytest.fail(str(exc) or one_line(exc), pytrace=False)
        item.stash[COLUMNS_KEY] = row_columns(handles)
        return handles

    def failure_reason(self, case: Case, reason: str | None) -> str:
        """A failed case's reason; when a service it used is gone, that comes first."""
        reason = reason or "failed in the worker"
        lost = self.services.lost(case.services) if case.services else None
        return f"{lost} (the case: {reason})" if lost else reason

    @property
    def results_path(self) -> Path | ObjectPath:
        return self.results.path_of(f"{self.run_id}.parquet")

    def context(self) -> CaseContext:
        """Load the dataset once, on the first case that needs it."""
        if self._dataset_error is not None:
            raise RuntimeError(self._dataset_error)
        if self._context is None:
            from imgbench.datasets import DatasetError, load_dataset

            try:
                dataset = load_dataset(self.dataset_spec or self.profile.dataset)
            except DatasetError as exc:
                self._dataset_error = f"dataset: {exc}"
                raise RuntimeError(self._dataset_error) from None
            self._context = CaseContext(
                dataset=dataset, profile=self.profile, max_images=self.max_images
            )
        return self._context

    def record(self, row: dict[str, Any]) -> None:
        self.rows.append(row)
        try:
            self.results.write_table(f"{self.run_id}.parquet", rows_table(self.rows))
        except ResultsLocationError as exc:
            pytest.exit(f"imgbench: {exc}", returncode=3)


STATE_KEY = pytest.StashKey[SessionState]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("imgbench", "imgbench: image pipeline benchmarks")
    group.addoption(
        "--imgbench-results",
        metavar="DIR",
        default="results",
        help="folder for the run's parquet file (default: results)",
    )
    group.addoption(
        "--imgbench-profile",
        metavar="NAME",
        default="default",
        help="quick | default | full, or a [tool.imgbench.profiles.NAME] of pyproject.toml "
        "(default: default)",
    )
    group.addoption(
        "--dataset",
        "--imgbench-dataset",
        dest="imgbench_dataset",
        metavar="PATH_OR_RECIPE",
        default=None,
        help="a folder of images, or a recipe name from datasets/ (default: the profile's)",
    )
    group.addoption(
        "--imgbench-env",
        metavar="NAME",
        default="main",
        help="the isolated environment this session runs in (main, pillow-simd, tensorflow, mosaic)",
    )
    group.addoption(
        "--imgbench-secondary",
        action="store_true",
        default=False,
        help="this session runs one of the profile's extra datasets: stages thin their plans",
    )
    group.addoption("--imgbench-rounds", type=int, default=None, help="timed rounds per case")
    group.addoption(
        "--imgbench-process",
        choices=("worker", "in-process"),
        default=None,
        help="worker: each case in a fresh fork of a pristine server process; in-process: in "
        "this pytest process (default: the profile's)",
    )
    group.addoption(
        "--imgbench-allocator-session",
        action="store_true",
        default=False,
        help="this session measures one of the profile's allocators: its allocator_plans",
    )
    group.addoption(
        "--imgbench-allocator",
        choices=ALLOCATORS,
        default=None,
        help="the worker processes' allocator (default: the profile's)",
    )
    group.addoption(
        "--imgbench-worker-imports",
        choices=WORKER_IMPORTS,
        default=None,
        help="profile: the worker server imports what every case of the profile needs, so a "
        "case alone and inside the suite fork from the same process; selected: only the selected "
        "cases' (always so for instruction counts). Default: the profile's",
    )
    group.addoption(
        "--imgbench-processes",
        type=int,
        default=None,
        metavar="N",
        help="worker processes per case, each with its own heap layout, their rounds pooled "
        "(pyperf's processes; default: the profile's)",
    )
    group.addoption(
        "--imgbench-address-layout",
        choices=LAYOUTS,
        default=None,
        help="fixed: the worker processes run with address-space randomisation off, the same "
        "layout every session; randomized: the kernel's draw per session (default: the profile's)",
    )
    group.addoption(
        "--imgbench-min-round-ms",
        type=float,
        default=None,
        help="a timed round repeats its items until it lasts this long (default: the profile's)",
    )
    group.addoption(
        "--imgbench-min-case-ms",
        type=float,
        default=None,
        help="a case times rounds until they add up to this (default: the profile's; 0: rounds only)",
    )
    group.addoption(
        "--imgbench-host-gate",
        type=float,
        default=None,
        metavar="RATIO",
        help="time a round again when a host probe beside it ran this many times slower than "
        "the session's fastest; 0 keeps every round (default: the profile's)",
    )
    group.addoption(
        "--imgbench-measure",
        choices=("wall", "instructions"),
        default="wall",
        help="wall: timed rounds; instructions: one pass per case counted under valgrind's "
        "callgrind (deterministic; CPU-bound single-thread cases only, others are skipped)",
    )
    group.addoption("--imgbench-max-images", type=int, default=None, help="images per timed round")
    group.addoption(
        "--imgbench-select",
        metavar="FILE",
        default=None,
        help="run only the tests whose node ids FILE lists, one a line (how `imgbench run --ray` "
        "gives each node its share)",
    )
    group.addoption(
        "--imgbench-list-cases",
        metavar="FILE",
        default=None,
        help="write the collected cases (test id, case id, stage, library, ...) to FILE as JSON",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "imgbench(stage): the module's cases come from this imgbench stage"
    )
    try:
        profile = get_profile(config.getoption("imgbench_profile"))
        if config.getoption("imgbench_secondary"):
            profile = profile.on_extra_dataset()
        if config.getoption("imgbench_allocator_session"):
            profile = profile.in_allocator_session()
    except ProfileError as exc:
        raise pytest.UsageError(f"imgbench: {exc}") from None
    spec = config.getoption("imgbench_dataset")
    if spec and looks_like_path(spec) and not Path(spec).exists():
        raise pytest.UsageError(f"imgbench: dataset path does not exist: {spec}")
    save_name = config.getoption("benchmark_save", None)
    run_id = new_run_id(save_name)
    try:
        results = results_location(config.getoption("imgbench_results"))
        if results.remote:
            results.check()
    except ResultsLocationError as exc:
        raise pytest.UsageError(f"imgbench: {exc}") from None
    config.stash[STATE_KEY] = SessionState(
        config=config,
        profile=profile,
        results=results,
        dataset_spec=spec,
        rounds=config.getoption("imgbench_rounds") or profile.rounds,
        warmup_rounds=profile.warmup_rounds,
        max_images=config.getoption("imgbench_max_images") or profile.max_images,
        min_round_s=(
            profile.min_round_s
            if config.getoption("imgbench_min_round_ms") is None
            else config.getoption("imgbench_min_round_ms") / 1e3
        ),
        min_case_s=(
            profile.min_case_s
            if config.getoption("imgbench_min_case_ms") is None
            else config.getoption("imgbench_min_case_ms") / 1e3
        ),
        run_id=run_id,
        run_name=save_name,
        environment=config.getoption("imgbench_env"),
        process_model=config.getoption("imgbench_process") or profile.process_model,
        allocator=config.getoption("imgbench_allocator") or profile.allocator,
        address_layout=config.getoption("imgbench_address_layout") or profile.address_layout,
        processes=config.getoption("imgbench_processes") or profile.processes,
        worker_imports=worker_imports_setting(config, profile),
        host_gate=HostGate(
            max_ratio=(
                profile.host_max_ratio
                if config.getoption("imgbench_host_gate") is None
                else config.getoption("imgbench_host_gate")
            ),
            budget_s=profile.host_budget_s,
        ),
        measure=config.getoption("imgbench_measure"),
        secondary=bool(config.getoption("imgbench_secondary")),
        allocator_session=bool(config.getoption("imgbench_allocator_session")),
    )


def worker_imports_setting(config: pytest.Config, profile: Profile) -> str:
    """The option, else ``IMGBENCH_WORKER_IMPORTS``, else the profile's ``worker_imports``."""
    chosen: str = (
        config.getoption("imgbench_worker_imports")
        or os.environ.get(WORKER_IMPORTS_ENV)
        or profile.worker_imports
    )
    if chosen not in WORKER_IMPORTS:
        raise pytest.UsageError(
            f"imgbench: {WORKER_IMPORTS_ENV}={chosen!r}; known: {', '.join(WORKER_IMPORTS)}"
        )
    return chosen


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
    cases = stage_cases(stage, state.profile)
    if state.allocator_session:
        cases = with_allocator(cases, state.allocator)
    # Each session runs only its own environment's cases: the others are measured by their
    # environment's session (`imgbench run` starts it), so here they are counted, not written as
    # skipped rows that would drown the real reasons.
    # A case of an isolated environment that is not built here and that `imgbench run` would not
    # build for this profile (not in its ``environments``) is measured by no session: it stays,
    # as a skipped row saying how to build that environment.
    kept = []
    for case in cases:
        if case.environment == state.environment:
            kept.append(case)
        elif reason := unmeasured_reason(case.environment, state):
            state.unbuilt[case.environment] = reason
            kept.append(case)
        else:
            state.elsewhere[case.environment] = state.elsewhere.get(case.environment, 0) + 1
    cases = kept
    metafunc.parametrize("imgbench_case", cases, ids=[c.test_id for c in cases])


def unmeasured_reason(environment: str, state: SessionState) -> str | None:
    """Why no session measures the cases of an isolated ``environment`` that this main session
    collects: it is not built here, and this profile's `imgbench run` would not build it (not in
    ``Profile.environments``). None when that environment's own session measures them."""
    if state.environment != "main" or environment in state.profile.environments:
        return None
    from imgbench.envs import is_built

    if is_built(environment):
        return None
    return f"{environment} env not built: `imgbench env create {environment}`"


class Harness:
    """The ``imgbench`` fixture: ``imgbench.measure(case)`` times a case and records its row."""

    def __init__(self, item: pytest.Item, benchmark: Any, state: SessionState) -> None:
        self._item = item
        self._benchmark = benchmark
        self._state = state

    def measure(self, case: Case) -> Measurement:
        self._item.stash[CASE_KEY] = case
        if case.environment in self._state.unbuilt:  # no session measures it: a skipped row
            pytest.skip(self._state.unbuilt[case.environment])
        if case.environment != self._state.environment:
            self._item.stash[RECORDED_KEY] = True  # its own environment's session writes its row
            envs = self._state.elsewhere
            envs[case.environment] = envs.get(case.environment, 0) + 1
            pytest.skip(
                f"runs in the {case.environment} environment: `imgbench env create "
                f"{case.environment}`, then `imgbench run --env {case.environment}`"
            )
        reason = case.unmet_requirement()
        if reason:
            pytest.skip(reason)
        ctx = self._state.context()
        state = self._state
        ctx.services = state.acquire_services(case, self._item)
        if state.measure == "instructions":
            why = instructions.unsupported(case) or instructions.valgrind_missing()
            if why:
                pytest.skip(f"instructions: {why}")
        if not math.isfinite(state.host_gate.reference_s):
            state.host_gate.calibrate()  # the host's fast state, before the session's first case
        if state.uses_worker(case):
            result: Measurement = state.measure_in_workers(case, ctx)
            record_samples(self._benchmark, case, result)
        else:
            if state.allocator_session and current_allocator() != state.allocator:
                pytest.skip(
                    f"this session's process runs with the {current_allocator()} allocator, not "
                    f"{state.allocator} (`imgbench run` starts allocator sessions under theirs)"
                )
            try:
                result = measure(
                    self._benchmark,
                    case,
                    ctx,
                    state.rounds,
                    state.warmup_rounds,
                    state.min_round_s,
                    state.host_gate,
                    min_case_s=state.min_case_s,
                )
            except Exception as exc:
                if not case.services or not (lost := state.services.lost(case.services)):
                    raise
                pytest.fail(f"{lost} (the case: {one_line(exc)})", pytrace=False)
            result.allocator = current_allocator()
            result.address_layout = current_layout()
        self._item.stash[MEASUREMENT_KEY] = result
        return result


@pytest.fixture
def imgbench(request: pytest.FixtureRequest, benchmark: Any) -> Harness:
    return Harness(request.node, benchmark, request.config.stash[STATE_KEY])


def pytest_runtest_setup(item: pytest.Item) -> None:
    item.stash[START_KEY] = time.perf_counter()
    callspec = getattr(item, "callspec", None)
    if callspec is not None and isinstance(callspec.params.get("imgbench_case"), Case):
        item.stash[CASE_KEY] = callspec.params["imgbench_case"]


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
    final = report.when == "call" or (report.when == "setup" and not report.passed)
    if not final:
        return
    state = item.config.stash[STATE_KEY]
    measurement = item.stash.get(MEASUREMENT_KEY, None)
    if report.skipped:
        status, reason = "skipped", _skip_reason(report)
    elif report.failed:
        status, reason = "failed", _failure_reason(call)
    elif measurement is None:
        status, reason = "failed", "the bench passed without calling imgbench.measure(case)"
    else:
        status, reason = "ok", None
    row = build_row(state, item, case, measurement if status == "ok" else None, status, reason)
    item.stash[RECORDED_KEY] = True
    state.record(row)


def _skip_reason(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    text = str(longrepr[2]) if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
    return text.removeprefix("Skipped: ").strip()


def _failure_reason(call: pytest.CallInfo[None]) -> str:
    if call.excinfo is None:
        return "failed"
    return one_line(call.excinfo.value)


def build_row(
    state: SessionState,
    item: pytest.Item,
    case: Case,
    measurement: Measurement | None,
    status: str,
    reason: str | None,
) -> dict[str, Any]:
    row = row_header(state.run_id, state.run_name, os.environ.get(RUN_GROUP_ENV) or state.run_id)
    row.update(case_listing(item, case))
    row.update(
        library_version=dist_version(case.dist) if case.dist else None,
        status=status,
        reason=reason,
        wall_s=time.perf_counter() - item.stash.get(START_KEY, time.perf_counter()),
    )
    row.update(case.columns)
    service_columns: dict[str, Any] = item.stash.get(COLUMNS_KEY, {})
    row.update(service_columns)
    ctx = state._context
    if ctx is not None:
        ds = ctx.dataset
        row.update(
            dataset_name=ds.name,
            dataset_fingerprint=ds.fingerprint,
            dataset_images=ds.n_images,
            dataset_mean_megapixels=ds.mean_megapixels,
            dataset_codec=ds.codec,
        )
    else:
        row.update(dataset_name=state.dataset_spec or state.profile.dataset)
    if measurement is not None:
        row.update(measurement_columns(measurement))
        row["extra_json"] = json.dumps(
            {"timer": measurement.timer, **measurement.extra}, default=str
        )
    return row


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``--imgbench-select FILE``: only the listed tests run; the others are deselected."""
    path = config.getoption("imgbench_select", None)
    if not path:
        return
    wanted = {line.strip() for line in Path(path).read_text().splitlines() if line.strip()}
    kept = [item for item in items if item.nodeid in wanted]
    deselected = [item for item in items if item.nodeid not in wanted]
    if deselected:
        config.hook.pytest_deselected(items=deselected)
    items[:] = kept


def _case_of(item: pytest.Item) -> Case | None:
    callspec = getattr(item, "callspec", None)
    case = callspec.params.get("imgbench_case") if callspec is not None else None
    return case if isinstance(case, Case) else None


def case_listing(item: pytest.Item, case: Case) -> dict[str, Any]:
    """What a row says about a case before it is measured (``--imgbench-list-cases``)."""
    return {
        "test_id": item.nodeid,
        "case_id": case.case_id,
        "stage": case.stage,
        "library": case.library,
        "variant": case.variant,
        "environment": case.environment,
        "codec": case.params.get("codec"),
        "mode": case.params.get("mode"),
        "cache_state": case.params.get("cache_state"),
        "threads": case.threads,
        "workers": case.params.get("workers"),
        "batch_size": case.params.get("batch_size"),
        "params_json": json.dumps(dict(case.params), sort_keys=True, default=str),
    }


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
        case = _case_of(item)
        if case is not None:
            if case.environment not in state.unbuilt:  # skipped rows: nothing to import
                required.update(case.requires)
            listing.append(case_listing(item, case))
    if state.measure == "instructions":
        state.worker_imports = "selected"
    if state.worker_imports == "profile":
        required.update(profile_imports(state.profile, state.environment))
    state.preload = tuple(sorted(required))
    out = session.config.getoption("imgbench_list_cases", None)
    if out:
        from imgbench.atomic import atomic_file

        with atomic_file(Path(out), "w") as handle:
            json.dump(listing, handle)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """The session's shared inputs end with it; what it built on disk is removed."""
    state = session.config.stash.get(STATE_KEY, None)
    if state is not None and state._server is not None:
        state._server.stop()
    if state is not None:
        state.services.stop()
    if state is not None and state._context is not None:
        state._context.close()


def pytest_benchmark_update_machine_info(config: pytest.Config, machine_info: dict) -> None:
    from imgbench.machine import machine_info as imgbench_machine

    machine_info["imgbench"] = imgbench_machine().as_row()


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    state = config.stash.get(STATE_KEY, None)
    if state is None or not (state.rows or state.elsewhere):
        return
    terminalreporter.write_sep("-", "imgbench")
    if state.elsewhere:
        for environment, n in sorted(state.elsewhere.items()):
            terminalreporter.write_line(
                f"{n} cases run in the {environment} environment, not this {state.environment} "
                f"session (no rows here): `imgbench run --env {environment}`"
            )
    if not state.rows:
        return
    counts: dict[str, int] = {}
    for row in state.rows:
        counts[row["status"]] = counts.get(row["status"], 0) + 1
    summary = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
    if state._context is not None:
        ds = state._context.dataset
        bad = ds.manifest.bad
        terminalreporter.write_line(
            f"dataset {ds.name} ({ds.fingerprint}): {ds.n_images} images, {ds.codec}, "
            f"{ds.mean_megapixels:.2f} MP mean; {len(bad)} files excluded"
        )
        for entry in bad[:10]:
            terminalreporter.write_line(f"  excluded {entry.path}: {entry.reason}")
        if len(bad) > 10:
            terminalreporter.write_line(f"  ... and {len(bad) - 10} more (imgbench dataset scan)")
    terminalreporter.write_line(f"imgbench results ({summary}): {state.results_path}")
    skipped = [r for r in state.rows if r["status"] == "skipped"]
    reasons: dict[str, int] = {}
    for row in skipped:
        reasons[row["reason"]] = reasons.get(row["reason"], 0) + 1
    for reason, n in sorted(reasons.items(), key=lambda kv: -kv[1]):
        terminalreporter.write_line(f"  skipped x{n}: {reason}")
