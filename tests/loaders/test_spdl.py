"""SPDL's pipeline as a loader, on real photos: right batches in threads and in its subprocess,
with the Python decoders and with spdl.io's FFmpeg decode; broken files named; nothing left."""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest
import torch

from imgbench.loaders import cases
from imgbench.loaders.documented import documented_counts
from imgbench.loaders.plan import LoaderPlan
from imgbench.loaders.registry import pipeline_config
from imgbench.measure.context import CaseContext
from imgbench.profiles import get_profile
from imgbench.readers.libs.spdl import ffmpeg_problem
from imgbench.readers.registry import find_spec
from tests.loaders.bad_files import BAD_FILES, first_error, folder

pytest.importorskip("spdl.pipeline")

PLAN = get_profile("quick").plan(LoaderPlan)
FFMPEG = ffmpeg_problem()
needs_ffmpeg = pytest.mark.skipif(FFMPEG is not None, reason=str(FFMPEG))


def _children() -> set[int]:
    return {p.pid for p in psutil.Process().children(recursive=True)}


def _settled(condition: Callable[[], bool], seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _run(ctx: CaseContext, library: str, threads: int, pipeline: str):  # type: ignore[no-untyped-def]
    case = cases.loader_case(library, threads, plan=PLAN, config=pipeline_config(pipeline))
    reason = case.unmet_requirement()
    if reason:
        pytest.skip(reason)
    workload = case.prepare(ctx, case)
    run = workload.fn.__self__  # the LoaderRun
    try:
        for _ in range(3):  # past the warm-up batches: the rest are counted
            for item in workload.items:
                workload.fn(item)
        batch = next(run._iterator)
    finally:
        workload.close()
    return workload, batch


@pytest.mark.parametrize(
    ("library", "pipeline"),
    [
        ("spdl", "default"),
        pytest.param("spdl", "spdl-io", marks=needs_ffmpeg),
        pytest.param("spdl-subprocess", "spdl-io", marks=needs_ffmpeg),
    ],
)
def test_batches_and_cleanup(photo_ctx: CaseContext, library: str, pipeline: str) -> None:
    threads_before = {t.ident for t in threading.enumerate()}
    children_before = _children()
    workload, batch = _run(photo_ctx, library, 2, pipeline)
    images, labels, stage_s, collate_s = batch
    assert images.shape == (8, 3, 224, 224) and images.dtype == torch.float32
    assert set(labels.tolist()) <= {0, 1}
    assert stage_s.shape == (8, 3) and (stage_s > 0).all() and collate_s > 0
    extra = workload.extra
    assert extra["first_batch_check"] == "pass"
    assert set(extra["stage_times_s"]) == {"read", "decode", "augment", "collate"}
    assert extra["spdl_concurrency"] == 2
    assert "spdl-core" in extra["pipeline_versions"]
    if pipeline == "spdl-io":
        assert extra["pipeline_versions"]["spdl-io"]
    if library == "spdl-subprocess":
        assert extra["spdl_mode"] == "subprocess" and len(extra["worker_pids"]) == 1
        assert {p["process"] for p in extra["memory_timeline"]} >= {"main", "worker-0"}
    else:
        assert extra["spdl_mode"] == "threads" and extra["worker_pids"] == []
    assert extra["workers_alive_after_close"] == [] and extra["workers_left_after_reap"] == []
    # nothing outlives the case: no thread of SPDL's (multiprocessing's queue feeder, a daemon,
    # may take a moment to see its queue closed), no process
    assert _settled(lambda: {t.ident for t in threading.enumerate()} <= threads_before)
    assert not [p for p in _children() - children_before if psutil.pid_exists(p)]


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    ("library", "pipeline", "named"),
    [
        pytest.param("spdl", "spdl-io", ("truncated.jpg", "empty.jpg"), marks=needs_ffmpeg),
        # OpenCV may return a truncated JPEG's decodable part: its behaviour, not SPDL's
        ("spdl-subprocess", "default", ("empty.jpg",)),
    ],
)
def test_broken_files_are_named(
    tmp_path: Path, photo_dir: Path, library: str, pipeline: str, named: tuple[str, ...]
) -> None:
    for bad in BAD_FILES:
        if bad == "truncated.jpg" and bad not in named:
            continue
        root = tmp_path / bad.replace(".", "-")
        error = first_error(library, pipeline, folder(root, photo_dir, bad))
        if bad in named:
            assert error is not None and str(root / bad) in error, error
            assert "broken samples" in error
        else:  # a PNG named .jpg decodes by its content, as the dataset scan identifies it
            assert error is None, error


def test_missing_ffmpeg_skips_with_the_reason() -> None:
    """The registry's check loads FFmpeg's libraries for real: a library that is not there is a
    skipped case naming it and the Debian packages, for the reader and the loader rows."""
    reason = ffmpeg_problem(("avcodec_imgbench_missing",))
    assert reason is not None
    assert "libavcodec_imgbench_missing" in reason and "libavcodec59" in reason
    spec = find_spec("spdl", "load-image")
    assert spec.check is not None and spec.check() == FFMPEG
    broken = dataclasses.replace(spec, check=lambda: ffmpeg_problem(("avcodec_imgbench_missing",)))
    assert broken.unmet_requirement() == reason
    case = cases.loader_case("spdl", 2, plan=PLAN, config=pipeline_config("spdl-io"))
    assert case.unmet_requirement() == FFMPEG  # the decoder's check reaches the loader rows
    assert cases.loader_case("spdl", 2, plan=PLAN).unmet_requirement() is None


def test_default_profile_runs_a_small_sweep_and_the_subprocess() -> None:
    planned = [
        c
        for c in cases.loader_cases(get_profile("default"))
        if "spdl" in c.library and "accelerator_images_per_s" not in c.params  # AU: elsewhere
    ]
    plan = get_profile("default").plan(LoaderPlan)
    got = sorted(
        (c.library, c.params["workers"], c.params["decoder"], c.params.get("spdl_shape", ""))
        for c in planned
        if "preload" not in c.params
    )
    # the in-RAM ceilings through SPDL's thread sweep too, at one thread per core
    ceilings = sorted(
        (c.library, c.params["workers"], c.params["preload"])
        for c in planned
        if "preload" in c.params
    )
    cores = os.cpu_count() or 2
    assert ceilings == [("spdl", cores, "bytes"), ("spdl", cores, "decoded")]
    decoders = ("opencv/imdecode-rgb", "spdl/load-image")
    want = sorted(
        [("spdl", t, d, "") for t in plan.thread_sweep for d in decoders]
        + [("spdl-subprocess", 2, d, "") for d in decoders]
        # as SPDL's own examples build it: one task per batch (loaders/documented.py)
        + [("spdl", t, decoders[0], "per-batch") for t in documented_counts(plan.thread_sweep)]
    )
    assert got == want
    assert len({c.case_id for c in planned}) == len(planned)
