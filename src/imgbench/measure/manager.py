"""One entry point for measuring a case: ``Manager.measure(case) -> Measurement | Skipped |
Failed``, with no test framework around it.

A session's manager owns what its cases share: the one :class:`Settings`, the dataset context
(loaded on first use), the worker server (started on first use, with the allocator and address
layout of the settings) and the session services (an S3 server). The pytest plugin, ``imgbench
profile`` and the scripts measure through it alike; none of them times a round itself.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

from imgbench.errors import one_line
from imgbench.measure import instructions
from imgbench.measure.allocator import AllocatorUnavailableError, allocator
from imgbench.measure.allocator import current as current_allocator
from imgbench.measure.case import Case
from imgbench.measure.context import CaseContext
from imgbench.measure.errors import CaseFailed, Skip
from imgbench.measure.layout import current as current_layout
from imgbench.measure.planner import Planner
from imgbench.measure.rounds import Measurement, pool, run_case
from imgbench.measure.server import HEAP_OFFSET_STEP, WorkerJob, WorkerServer
from imgbench.measure.services import Services, ServiceUnavailableError, row_columns
from imgbench.measure.settings import Settings


@dataclass(frozen=True)
class Skipped:
    """The case cannot run here; ``reason`` says why (a skipped row)."""

    reason: str
    columns: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Failed:
    """The case broke, or a service it needed was lost; ``reason`` is one line (a failed row)."""

    reason: str
    columns: dict[str, Any] = field(default_factory=dict)


Outcome = Measurement | Skipped | Failed


class DatasetUnavailableError(RuntimeError):
    """The session's dataset does not load: every case fails with the same line."""


class Manager:
    """Measures one session's cases under one :class:`Settings`."""

    def __init__(
        self,
        settings: Settings,
        planner: Planner,
        dataset: str,
        preload: tuple[str, ...] = (),
    ) -> None:
        self.settings = settings
        self.planner = planner  # the session's cases, planned again in each worker fork
        self.dataset = dataset  # a folder or a recipe name
        self.preload = preload  # modules the worker server imports before it forks
        self.gate = settings.host_gate()  # its reference: the session's fastest probe
        self.services = Services()
        self._context: CaseContext | None = None
        self._dataset_error: str | None = None
        self._server: WorkerServer | None = None

    # -- the one entry point -------------------------------------------------------------------
    def measure(self, case: Case) -> Outcome:
        """The case measured as the settings say (in a worker fork or here), or why not."""
        reason = case.unmet_requirement()
        if reason:
            return Skipped(reason)
        try:
            ctx = self.context()
        except DatasetUnavailableError as exc:
            return Failed(str(exc))
        columns: dict[str, Any] = {}
        try:
            ctx.services = self._acquire_services(case, columns)
            if self.settings.measure == "instructions":
                why = instructions.unsupported(case) or instructions.valgrind_missing()
                if why:
                    raise Skip(f"instructions: {why}")
            if not math.isfinite(self.gate.reference_s):
                self.gate.calibrate()  # the host's fast state, before the session's first case
            if self.uses_worker(case):
                result = self._in_workers(case, ctx)
            else:
                result = self._here(case, ctx)
        except Skip as exc:
            return Skipped(exc.reason, columns)
        except CaseFailed as exc:
            return Failed(exc.reason, columns)
        result.columns.update(columns)
        return result

    def uses_worker(self, case: Case) -> bool:
        """Worker processes plan a case again (``Case.in_worker``: its stage's planner can);
        others run here."""
        return case.in_worker and self.settings.in_worker()

    def context(self) -> CaseContext:
        """The session's dataset context, loaded on the first case that needs it."""
        if self._dataset_error is not None:
            raise DatasetUnavailableError(self._dataset_error)
        if self._context is None:
            from imgbench.datasets import DatasetError, load_dataset

            try:
                dataset = load_dataset(self.dataset)
            except DatasetError as exc:
                self._dataset_error = f"dataset: {exc}"
                raise DatasetUnavailableError(self._dataset_error) from None
            self._context = CaseContext(
                dataset=dataset, settings=self.settings, plans=self.planner.plans
            )
        return self._context

    @property
    def loaded_context(self) -> CaseContext | None:
        """The context if a case loaded it (rows name its dataset), without loading it."""
        return self._context

    def close(self) -> None:
        """Stop the worker server and the services, and remove what the session built."""
        if self._server is not None:
            self._server.stop()
            self._server = None
        self.services.stop()
        if self._context is not None:
            self._context.close()

    # -- in this process -----------------------------------------------------------------------
    def _here(self, case: Case, ctx: CaseContext) -> Measurement:
        if self.planner.allocator_session and current_allocator() != self.settings.allocator:
            raise Skip(
                f"this session's process runs with the {current_allocator()} allocator, not "
                f"{self.settings.allocator} (`imgbench run` starts allocator sessions under theirs)"
            )
        try:
            result = run_case(case, ctx, self.gate)
        except (Skip, CaseFailed):
            raise
        except Exception as exc:
            if not case.services or not (lost := self.services.lost(case.services)):
                raise CaseFailed(one_line(exc)) from exc
            raise CaseFailed(f"{lost} (the case: {one_line(exc)})") from exc
        result.allocator = current_allocator()
        result.address_layout = current_layout()
        return result

    # -- in worker processes -------------------------------------------------------------------
    def server(self) -> WorkerServer:
        """The session's worker server, started on first use with the chosen allocator."""
        if self._server is None:
            try:
                chosen = allocator(self.settings.allocator)
            except AllocatorUnavailableError as exc:
                raise Skip(str(exc)) from None
            counting = self.settings.measure == "instructions"
            self._server = WorkerServer(
                chosen,
                self.dataset,
                callgrind_dir=self.context().scratch_dir() / "callgrind" if counting else None,
                preload=self.preload,
                address_layout=self.settings.address_layout,
            )
        return self._server

    def job(self, case: Case, ctx: CaseContext) -> WorkerJob:
        scratch = ctx.scratch_dir()
        return WorkerJob(
            settings=self.settings,
            planner=self.planner,
            dataset=self.dataset,
            stage=case.stage,
            case_id=case.case_id,
            scratch=str(scratch),
            result_path=str(scratch / "worker-result.pickle"),
            host_reference_s=self.gate.reference_s,
            services={name: ctx.services[name] for name in case.services},
        )

    def _in_workers(self, case: Case, ctx: CaseContext) -> Measurement:
        """The case in ``processes`` worker processes, each with its own heap offset; the first
        calibrates the rounds the others repeat."""
        processes = self.settings.processes
        job = self.job(case, ctx)
        if processes > 1:
            rounds = self.settings.for_case(case).rounds
            split = replace(
                self.settings,
                rounds=max(2, math.ceil(rounds / processes)),
                loader_rounds=0,
            )
            job = replace(job, settings=split)
        parts: list[Measurement] = []
        built: tuple[str, ...] = ()
        for index in range(processes):
            process_job = replace(
                job,
                heap_offset=index * HEAP_OFFSET_STEP,
                round_repeats=parts[0].round_repeats if parts else None,
                host_reference_s=self.gate.reference_s,
            )
            outcome = self.server().run(process_job)
            if (
                index == 0
                and outcome.status == "ok"
                and outcome.built
                and self.settings.measure == "wall"
            ):
                # it built the session's shared inputs (reference decodes, a store) before its
                # rounds, and a case after it would load them: measured again in a fresh fork,
                # its heap has the same history alone and inside the suite
                built = outcome.built
                outcome = self.server().run(process_job)
            if outcome.status == "skipped":
                raise Skip(outcome.reason or "skipped in the worker")
            if outcome.status != "ok":
                reason = outcome.reason if index == 0 else f"process {index + 1}: {outcome.reason}"
                raise CaseFailed(self._failure_reason(case, reason))
            if built:
                outcome.measurement.extra["measured_again_after_building"] = len(built)
            parts.append(outcome.measurement)
            self.gate.reference_s = min(self.gate.reference_s, outcome.measurement.host_reference_s)
        return pool(parts)

    # -- services ------------------------------------------------------------------------------
    def _acquire_services(self, case: Case, columns: dict[str, Any]) -> dict[str, Any]:
        """The handles of the services the case needs; their row columns go into ``columns``."""
        if not case.services:
            return {}
        try:
            handles = self.services.handles(case.services)
        except ServiceUnavailableError as exc:
            raise Skip(str(exc)) from None
        except Exception as exc:  # failed to start, or lost earlier in the session
            columns.update(row_columns(self.services.last_handles(case.services)))
            raise CaseFailed(str(exc) or one_line(exc)) from None
        columns.update(row_columns(handles))
        return handles

    def _failure_reason(self, case: Case, reason: str | None) -> str:
        """A failed case's reason; when a service it used is gone, that comes first."""
        reason = reason or "failed in the worker"
        lost = self.services.lost(case.services) if case.services else None
        return f"{lost} (the case: {reason})" if lost else reason
