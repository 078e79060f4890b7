"""The sweep of ``imgbench profile``: the user's pipeline at each worker count, one result row
per configuration, written as soon as it is measured.

Each configuration is one :class:`imgbench.loaders.run.LoaderRun` (the loader stage's first
batch timing, prefetch drain, batch deadlines, memory sampler and worker reaping) over
:class:`~imgbench.profiling.loader.UserLoader`, in three phases on the same workers:

1. throughput: batches as fast as they come for ``seconds`` (images/s from rounds of
   ``2 x workers`` batches, as the loader stage times them);
2. AU: after each batch an emulated training step of ``step_ms`` (``imgbench.loaders.au``);
3. stacks: batches as fast as they come while py-spy samples every process
   (``imgbench.profiling.stacks``), attributed to read / decode / augment / collate.

A configuration that fails (a sample that raises, a worker that dies or hangs past the batch
deadline) is a failed row with the reason and the sample index, and the sweep goes on.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from imgbench.envs import current_environment
from imgbench.errors import one_line
from imgbench.loaders.au import AU_PASS, ComputeStep, accelerator_utilisation
from imgbench.loaders.base import clock
from imgbench.loaders.run import LoaderRun
from imgbench.machine import dist_version
from imgbench.measure.allocator import current as current_allocator
from imgbench.measure.case import Workload
from imgbench.measure.memory import peak_rss_bytes, reset_peak_rss
from imgbench.measure.rounds import Measurement, time_workload
from imgbench.measure.rows import measurement_columns, new_run_id, row_header
from imgbench.measure.settings import Settings
from imgbench.profiling.attribution import attribute
from imgbench.profiling.flame import write_flame_graph
from imgbench.profiling.keras import LIBRARY as KERAS_LIBRARY
from imgbench.profiling.keras import SETTING as KERAS_SETTING
from imgbench.profiling.keras import (
    KerasUserLoader,
    is_keras_dataset,
    keras_version,
    sweep_points,
)
from imgbench.profiling.keras import label as keras_label
from imgbench.profiling.loader import UserLoader, batch_parts, failed_index, images_in
from imgbench.profiling.result import Configuration, ProfileResult
from imgbench.profiling.stacks import StackSampler
from imgbench.profiling.tfdata import (
    ATTRIBUTION_REASON,
    SETTING,
    TfDataUserLoader,
    is_tf_dataset,
    tf_version,
    thread_counts,
)
from imgbench.results.store import write_rows

STAGE = "profile"
LIBRARY = "torch-dataloader"
TF_LIBRARY = "tf-data"


@dataclass(frozen=True)
class ProfileSettings:
    """How long and how each configuration is measured."""

    seconds: float = 8.0  # throughput phase
    au_seconds: float | None = None  # AU phase; None: half of ``seconds``
    sample_seconds: float = 3.0  # stack sampling phase; 0: no stacks
    step_ms: float = 50.0  # the emulated training step after each batch
    batch_size: int = 32  # for a Dataset; a DataLoader keeps its own
    workers: tuple[int, ...] | None = None  # None: 0..cores, plus the loader's own setting
    batch_timeout_s: float = 30.0
    first_batch_timeout_s: float = 120.0
    memory_interval_s: float = 1.0
    sample_rate: int = 100  # py-spy samples per second
    compare_readers: bool = True  # decode-bound: time the verified readers on the user's files
    # the user's training step (``--step MODULE:FUNC``, called with each batch) as the consumer
    # in the AU phase instead of the ``step_ms`` sleep (imgbench.profiling.step)
    step: Callable[[Any], Any] | None = None
    step_target: str | None = None

    @property
    def au_phase_s(self) -> float:
        return self.seconds / 2 if self.au_seconds is None else self.au_seconds


def cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def worker_counts(source: Any, chosen: tuple[int, ...] | None) -> tuple[list[int], int | None]:
    """The worker counts to measure and the user's own (a DataLoader's ``num_workers``; for
    tf.data, thread pool sizes and the pipeline's own)."""
    if is_tf_dataset(source):
        return thread_counts(source, chosen, cores())
    from torch.utils.data import DataLoader

    own = source.num_workers if isinstance(source, DataLoader) else None
    counts = set(chosen) if chosen is not None else set(range(cores() + 1))
    if own is not None:
        counts.add(own)
    return sorted(counts), own


def points_of(
    source: Any, chosen: tuple[int, ...] | None
) -> tuple[list[tuple[int, bool | None]], tuple[int, bool | None] | None]:
    """The configurations to measure as ``(workers, use_multiprocessing)`` (None where the
    pipeline has no such setting) and the user's own; a Keras PyDataset sweeps both."""
    if is_keras_dataset(source):
        points, own = sweep_points(source, chosen, cores())
        return list(points), own
    counts, own_count = worker_counts(source, chosen)
    return [(w, None) for w in counts], (None if own_count is None else (own_count, None))


def dataset_of(source: Any) -> Any:
    if is_tf_dataset(source) or is_keras_dataset(source):
        return source
    from torch.utils.data import DataLoader

    return source.dataset if isinstance(source, DataLoader) else source


def profile(
    source: Any,
    *,
    target: str | None = None,
    settings: ProfileSettings | None = None,
    results_dir: Path | str = Path("results"),
    run_name: str | None = "profile",
    params: dict[str, Any] | None = None,
    on_configuration: Callable[[Configuration], None] | None = None,
) -> ProfileResult:
    """Sweep worker counts over ``source`` (a torch Dataset or DataLoader); every row is written
    to ``results_dir/RUN_ID.parquet`` as soon as it is measured."""
    settings = settings or ProfileSettings()
    dataset = dataset_of(source)
    label = target or f"{type(dataset).__module__}.{type(dataset).__name__}"
    run_id = new_run_id(run_name)
    results_path = Path(results_dir) / f"{run_id}.parquet"
    stacks_dir = Path(results_dir) / f"{run_id}.stacks"
    points, own = points_of(source, settings.workers)
    configurations: list[Configuration] = []
    rows: list[dict[str, Any]] = []
    parts: list[tuple[str, Path]] = []
    for workers, mp in points:
        key = f"workers={workers}" + ("" if mp is None else f",use_multiprocessing={mp}")
        stacks_file = stacks_dir / f"{key.replace(',', '-')}.speedscope.json"
        started = time.perf_counter()
        own_workers = None if own is None else own[0]
        config = measure_configuration(
            source, workers, settings, label, stacks_file, own_workers, mp
        )
        config.user_setting = (workers, mp) == own
        config.row = build_row(
            config, run_id, run_name, label, dataset, settings, params or {}, started
        )
        configurations.append(config)
        rows.append(config.row)
        write_rows(rows, results_path)  # atomically, after every configuration
        parts.append((key, stacks_file))
        if on_configuration is not None:
            on_configuration(config)
    flame = write_flame_graph(parts, Path(results_dir) / f"{run_id}.speedscope.json", label)
    for _, part in parts:
        part.unlink(missing_ok=True)
    if stacks_dir.is_dir() and not any(stacks_dir.iterdir()):
        stacks_dir.rmdir()
    result = ProfileResult(label, configurations, results_path, flame, settings.step_ms)
    if settings.step is not None:
        result.step = settings.step_target or getattr(settings.step, "__qualname__", "step")
    if is_tf_dataset(source):
        result.unit = "threads"
    from imgbench.profiling.advice import advise

    result.advice = advise(
        result, dataset, compare_readers=settings.compare_readers, results_dir=Path(results_dir)
    )
    return result


def measure_configuration(
    source: Any,
    workers: int,
    settings: ProfileSettings,
    label: str,
    stacks_file: Path,
    own: int | None = None,
    use_multiprocessing: bool | None = None,
) -> Configuration:
    """One worker count (tf.data: thread pool size) through the three phases; failures become
    a failed configuration."""
    reset_peak_rss()
    extra: dict[str, Any] = {}
    tf_data = is_tf_dataset(source)
    unit = "threads" if tf_data else "workers"
    loader: UserLoader | TfDataUserLoader | KerasUserLoader
    keras = use_multiprocessing is not None
    if keras:
        extra.update(use_multiprocessing=use_multiprocessing, keras_setting=KERAS_SETTING)
    shown = keras_label((workers, bool(use_multiprocessing))) if keras else f"{workers} {unit}"
    try:
        if keras:
            loader = KerasUserLoader(source, workers, bool(use_multiprocessing))
        elif tf_data:
            loader = TfDataUserLoader(source, workers, own or 0)
        else:
            loader = UserLoader(source, workers, settings.batch_size, settings.batch_timeout_s)
    except Exception as exc:
        why = f"{label} ({shown}): {one_line(exc)}"
        return Configuration(workers, False, "failed", why, None, extra)
    batch = loader.batch_size
    per_round = max(2, 2 * workers)
    run = LoaderRun(
        loader,
        f"{label} ({shown})",
        parallel=max(1, workers),
        warmup_batches=per_round,
        drain_batches=_drain_batches(loader, workers),
        batch_timeout_s=settings.batch_timeout_s,
        first_batch_timeout_s=settings.first_batch_timeout_s,
        # a short phase still gets about eight memory points (short-lived pool workers included)
        memory_interval_s=min(settings.memory_interval_s, settings.seconds / 8),
        count_images=lambda b: images_in(b[0], batch),
    )
    extra = {**extra, **run.extra}
    run.extra = extra
    extra.update(start_method=loader.start_method, batch_size=batch, phase_s={})
    if tf_data:
        extra.update(tf_data_setting=SETTING, tf_threads=workers)
        extra["attribution_reason"] = ATTRIBUTION_REASON  # said up front: no stacks to sample
    measurement, status, reason = _phases(run, loader, settings, stacks_file, per_round, extra)
    extra["epochs_started"] = loader.epochs + 1
    images_per_s = (
        measurement.images_per_round / float(np.median(measurement.samples_s))
        if measurement is not None and measurement.samples_s
        else None
    )
    step_rate = extra.get("step_images_per_s_cached")
    if images_per_s and step_rate:  # MLPerf Storage's measure, as the gpu rows give it
        extra["gpus_kept_at_90"] = images_per_s / (AU_PASS * step_rate)
    return Configuration(workers, False, status, reason, images_per_s, extra, {}, measurement)


def _drain_batches(loader: UserLoader | TfDataUserLoader | KerasUserLoader, workers: int) -> int:
    """Batches already made ahead when a phase starts: taken before its timing counts."""
    if isinstance(loader, KerasUserLoader):
        return loader.dataset.max_queue_size if loader.start_method else 0  # Keras's queue
    if isinstance(loader, TfDataUserLoader):
        return 1  # the pipeline's prefetch buffer: drained until batches must be waited for
    return workers * ((loader.loader.prefetch_factor or 0) if workers else 0)


def _phases(
    run: LoaderRun,
    loader: UserLoader | TfDataUserLoader | KerasUserLoader,
    settings: ProfileSettings,
    stacks_file: Path,
    per_round: int,
    extra: dict[str, Any],
) -> tuple[Measurement | None, str, str | None]:
    """Throughput, AU (at the user's step or the emulated one) and stacks, into ``extra``;
    the loader closed after. A failure is the configuration's status and reason."""
    measurement: Measurement | None = None
    try:
        run.start()
        measurement = _throughput(run, settings.seconds, per_round, loader.batch_size)
        if settings.step is not None:
            extra.update(_au_user_step(run, settings, loader.batch_size))
        else:
            extra.update(_au(run, settings))
        if not isinstance(loader, TfDataUserLoader):  # tf.data: no stacks to attribute
            extra.update(_stacks(run, settings, stacks_file, loader))
    except Exception as exc:
        reason = one_line(exc)
        index = failed_index(reason)
        if index is not None:
            extra["failed_index"] = index
        return measurement, "failed", reason
    finally:
        run.close()
    return measurement, "ok", None


# A user's loader through the rounds engine: rounds of ``per_round`` batches (one pass each: a
# loader's round is already many milliseconds), warmed up across one round, timed until they add
# up to the throughput phase's seconds (the engine's case floor). No host gate: its re-timed
# rounds would stretch a phase the user sized (measured: a tf.data sweep test 12.9 s -> 42.6 s).
_ROUNDS = 3  # the fewest rounds; ``seconds`` of rounds is the real floor


def _throughput(run: LoaderRun, seconds: float, per_round: int, batch: int) -> Measurement:
    """The loader's steady state, timed by the same engine as every bench case: a round is
    ``per_round`` batches of ``batch`` images (an epoch's last, smaller batch counts whole)."""
    settings = Settings(
        rounds=_ROUNDS, warmup_rounds=1, min_round_s=0.0, min_case_s=seconds, host_max_ratio=0.0
    )
    workload = Workload(
        items=[None] * per_round, fn=lambda _: run.step(), images_per_item=batch, runs_ahead=True
    )
    begin = clock()
    measurement = time_workload(workload, settings, settings.host_gate(), label="profile")
    run.extra["phase_s"]["throughput"] = round(clock() - begin, 3)
    measurement.cache_method = "n/a: the user's pipeline reads as it reads"
    measurement.process_model = "in-process"
    measurement.allocator = current_allocator()
    return measurement


def _au(run: LoaderRun, settings: ProfileSettings) -> dict[str, Any]:
    """AU with an emulated step of ``step_ms`` after each batch (sleep: the CPU is free)."""
    if settings.au_phase_s <= 0:
        return {}
    step = ComputeStep(settings.step_ms / 1e3)
    compute_s = wall_s = 0.0
    batches = 0
    begin = clock()
    while clock() - begin < settings.au_phase_s or batches < 2:
        start = clock()
        batch = run.pull()
        compute_s += step.run()
        if not batches:  # what the batches hold (shape, dtype), for the row and the advice
            run.extra["batch_parts"] = batch_parts(batch[0])
        wall_s += clock() - start
        batches += 1
    run.extra["phase_s"]["au"] = round(clock() - begin, 3)
    return {
        "au": accelerator_utilisation(compute_s, wall_s),
        "step_ms": settings.step_ms,
        "au_batches": batches,
        "compute_s_per_batch": step.seconds,
        "compute_kind": step.kind,
    }


def _au_user_step(run: LoaderRun, settings: ProfileSettings, batch: int) -> dict[str, Any]:
    """AU with the user's own step after each batch: first its own rate on one batch kept aside,
    then busy time over wall time while it consumes the loader's batches."""
    from imgbench.profiling.step import UserStep

    assert settings.step is not None
    step = UserStep(settings.step_target or "step", settings.step)
    cached = run.pull()
    begin = clock()
    rate = step.cached_rate(cached[0], images_in(cached[0], batch))
    run.extra["phase_s"]["step_cached"] = round(clock() - begin, 3)
    found: dict[str, Any] = {
        "step": step.target,
        "step_images_per_s_cached": rate,
        "step_s_cached": step.seconds,
        "step_cuda": step.cuda,
        "compute_kind": step.kind,
        "au_method": step.method,
        "batch_parts": batch_parts(cached[0]),
    }
    if settings.au_phase_s <= 0:
        return found
    busy_s = wall_s = 0.0
    batches = 0
    begin = clock()
    while clock() - begin < settings.au_phase_s or batches < 2:
        start = clock()
        busy_s += step.run(run.pull()[0])
        wall_s += clock() - start
        batches += 1
    start = clock()
    busy_s += step.finish()  # the step still in flight
    wall_s += clock() - start
    run.extra["phase_s"]["au"] = round(clock() - begin, 3)
    return {
        **found,
        "au": accelerator_utilisation(busy_s, wall_s),
        "au_batches": batches,
        "compute_s_per_batch": step.seconds,
    }


def _stacks(
    run: LoaderRun, settings: ProfileSettings, out: Path, loader: UserLoader | KerasUserLoader
) -> dict[str, Any]:
    """Pull batches while py-spy samples this process and its workers; the shares per category."""
    if settings.sample_seconds <= 0:
        return {}
    sampler = StackSampler(out, rate=settings.sample_rate)
    if not sampler.start():
        return {"attribution_error": sampler.error}
    begin = clock()
    try:
        while clock() - begin < settings.sample_seconds:
            run.pull()
    finally:
        stacks = sampler.stop()
    run.extra["phase_s"]["stacks"] = round(clock() - begin, 3)
    if sampler.error:
        return {"attribution_error": sampler.error}
    roles = {os.getpid(): "main"}
    roles.update(dict.fromkeys(loader.worker_pids(), "workers"))
    found = attribute(stacks, roles)
    return {
        "attribution": found.get("shares", {}),
        "attribution_samples": found.get("samples", 0),
        "attribution_wait_samples": found.get("wait_samples", 0),
        "attribution_by_role": found.get("by_role", {}),
        "decode_libraries": found.get("decode_libraries", {}),
        "attribution_rate_hz": settings.sample_rate,
        "attribution_start_s": sampler.start_s,
    }


def build_row(
    config: Configuration,
    run_id: str,
    run_name: str | None,
    label: str,
    dataset: Any,
    settings: ProfileSettings,
    params: dict[str, Any],
    started: float,
) -> dict[str, Any]:
    """The configuration as a results row (the same schema as every stage's)."""
    measurement = config.measurement
    row = row_header(run_id, run_name, run_id)
    tf_data = is_tf_dataset(dataset)
    keras = is_keras_dataset(dataset)
    try:  # tf.data and Keras: len() is batches
        n_images: int | None = None if tf_data or keras else len(dataset)
    except TypeError:
        n_images = None
    case_params = {
        **params,
        "target": label,
        "workers": config.workers,
        "batch_size": config.extra.get("batch_size") or settings.batch_size,
        "user_setting": config.user_setting,
        "seconds": settings.seconds,
        "au_seconds": settings.au_phase_s,
        "sample_seconds": settings.sample_seconds,
        "step_ms": settings.step_ms,
    }
    if settings.step is not None:
        case_params["step"] = settings.step_target
    batch_size = config.extra.get("batch_size") or settings.batch_size
    parts = config.extra.get("batch_parts") or []
    unsized = tf_data or (keras and not getattr(dataset, "batch_size", None))
    if unsized and parts and parts[0]["shape"]:
        batch_size = parts[0]["shape"][0]  # an unknown static batch size: the first batch's
        case_params["batch_size"] = config.extra["batch_size"] = batch_size
    unit = "threads" if tf_data else "workers"
    case = f"{STAGE}/{label}/{unit}={config.workers}"
    library, version = (TF_LIBRARY, tf_version()) if tf_data else (LIBRARY, dist_version("torch"))
    if keras:
        mp = config.extra.get("use_multiprocessing")
        case_params["use_multiprocessing"] = mp
        case += f",use_multiprocessing={mp}"
        library, version = KERAS_LIBRARY, keras_version()
    row.update(
        stage=STAGE,
        case_id=case,
        library=library,
        library_version=version,
        variant=label,
        environment=current_environment(),
        dataset_name=type(dataset).__name__,
        dataset_images=n_images,
        workers=config.workers,
        batch_size=batch_size,
        params_json=json.dumps(case_params, sort_keys=True, default=str),
        status=config.status,
        reason=config.reason,
        wall_s=time.perf_counter() - started,
        measure="wall",
    )
    if measurement is not None:
        measurement.peak_rss_bytes = peak_rss_bytes()
        row.update(measurement_columns(measurement))
    extra = {**config.extra, "user_setting": config.user_setting}
    row["extra_json"] = json.dumps(extra, default=str)
    return row


def settings_dict(settings: ProfileSettings) -> dict[str, Any]:
    return asdict(settings)
