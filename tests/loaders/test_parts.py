"""The parts a loader row is made of: deadline, memory sampler, stage times, AU, the case matrix."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import numpy as np
import pytest

from imgbench.errors import one_line
from imgbench.loaders.au import ComputeStep, accelerator_utilisation
from imgbench.loaders.base import LoaderError, deadline, reap
from imgbench.loaders.cases import loader_cases
from imgbench.loaders.memory import MemorySampler, summarise
from imgbench.loaders.plan import LoaderPlan
from imgbench.loaders.registry import LOADERS, UNAVAILABLE
from imgbench.loaders.stages import StageTimes, stage_extra
from imgbench.profiles import get_profile


def test_deadline_interrupts_a_hung_main_thread() -> None:
    start = time.perf_counter()
    with pytest.raises(LoaderError, match=r"stuck: no batch within 0\.2 s"), deadline(0.2, "stuck"):
        time.sleep(30)
    assert time.perf_counter() - start < 5


def test_one_line_keeps_the_worker_error() -> None:
    exc = ValueError(
        "Caught ValueError in DataLoader worker process 0.\nTraceback:\n  ...\nValueError: bad 3"
    )
    assert (
        one_line(exc)
        == "ValueError: Caught ValueError in DataLoader worker process 0. -> ValueError: bad 3"
    )


def test_memory_sampler_sees_a_worker_and_reap_ends_it() -> None:
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import time; b = bytearray(60_000_000); b[::4096] = b'x' * len(b[::4096]); time.sleep(60)",
        ]
    )
    try:
        sampler = MemorySampler(lambda: [child.pid], interval_s=0.1).start()
        time.sleep(1.0)
        summary = sampler.stop()
    finally:
        survivors = reap([child.pid], grace_s=2)
    assert survivors == [] and child.poll() is not None
    names = {p["process"] for p in summary["memory_timeline"]}
    assert names == {"main", "worker-0"}
    assert max(summary["final_uss_bytes"]["worker-0"], 0) > 50_000_000
    assert summary["peak_pss_bytes"] >= summary["final_pss_bytes"]["main"]


def test_rss_is_sampled_between_full_samples_and_its_cost_recorded() -> None:
    """A child that grows 10 MB every 0.1 s: the cheap RSS clock draws the growth while the
    full (PSS/USS) clock takes a few points; both clocks' costs are in the summary."""
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import time\nkeep = []\nfor _ in range(100):\n"
            "    keep.append(bytearray(b'x' * 10_000_000)); time.sleep(0.1)",
        ]
    )
    try:
        sampler = MemorySampler(lambda: [child.pid], interval_s=0.5, light_interval_s=0.05)
        sampler.start()
        time.sleep(1.6)
        summary = sampler.stop()
    finally:
        reap([child.pid], grace_s=2)
    full = [p for p in summary["memory_timeline"] if p["process"] == "worker-0"]
    light = [p for p in summary["rss_timeline"] if p["process"] == "worker-0"]
    assert 2 <= len(full) <= 6
    assert len(light) >= 15  # about 1.6 s / 0.05 s, minus the full samples' ticks
    assert light[-1]["rss_bytes"] - light[0]["rss_bytes"] > 50_000_000  # the growth is drawn
    assert all(set(p) == {"t_s", "process", "rss_bytes"} for p in light)
    assert summary["memory_interval_s"] == 0.5 and summary["memory_light_interval_s"] == 0.05
    assert 0 < summary["memory_light_sampling_s"] < summary["memory_sampling_s"]


def test_growth_is_the_slope_of_summed_pss() -> None:
    timeline = [
        {"t_s": t, "process": name, "rss_bytes": 0, "uss_bytes": 0, "pss_bytes": 1000 + 60 * t * k}
        for t in (0.0, 1.0, 2.0, 3.0)
        for name, k in (("main", 1), ("worker-0", 2))
    ]
    summary = summarise(timeline)
    assert summary["pss_growth_bytes_per_min"] == pytest.approx(3 * 60 * 60)
    assert summarise(timeline, steady_from_s=2.5)["pss_growth_bytes_per_min"] is None  # 1 point
    assert summary["peak_pss_bytes"] == 2000 + 3 * 60 * 3


def test_stage_times_per_image_and_efficiency() -> None:
    times = StageTimes()
    times.add(np.array([[0.001, 0.002, 0.003]] * 4), collate_s=0.004)
    extra = stage_extra(times, wall_s=0.014, parallel=2)
    assert extra["stage_times_s"] == pytest.approx(
        {"read": 0.001, "decode": 0.002, "augment": 0.003, "collate": 0.001}
    )
    assert extra["bottleneck_stage"] == "augment"
    assert extra["parallel_efficiency"] == pytest.approx(0.007 / (0.0035 * 2))


def test_compute_step_and_au() -> None:
    step = ComputeStep.for_accelerator(images_per_s=800, batch_size=8)
    assert step.seconds == pytest.approx(0.01)
    assert step.run() >= 0.01
    assert ComputeStep(0.005, "busy").run() >= 0.005
    assert accelerator_utilisation(0.9, 1.0) == pytest.approx(0.9)
    with pytest.raises(ValueError, match="compute kind"):
        ComputeStep(0.01, "gpu")


def test_case_matrix_per_profile() -> None:
    quick = loader_cases(get_profile("quick"))
    cores = os.cpu_count() or 2
    assert [(c.library, c.variant, c.params["workers"]) for c in quick] == [
        ("torch-dataloader", "files-opencv-albumentations", 0),
        ("torch-dataloader", "files-opencv-albumentations", 2),
        # the common default the answer's speed-ups are over: at 0 workers and one per core
        ("torch-dataloader", "files-pillow-torchvision", 0),
        ("torch-dataloader", "files-pillow-torchvision", cores),
        ("threadpool", "files-opencv-albumentations", 2),
    ]
    baseline = next(c for c in quick if c.variant == "files-pillow-torchvision")
    assert baseline.params["decoder"] == "pillow/open-convert"
    assert baseline.params["pipeline"] == "torchvision/v2-pil:train-classification"
    default = loader_cases(get_profile("default"))
    ids = [c.case_id for c in default]
    assert len(ids) == len(set(ids))
    # every loader but Ray Data (a minute a case: full, or by name)
    assert {s.library for s in LOADERS} - {c.library for c in default} == {"ray-data"}
    assert "ray-data" in {c.library for c in loader_cases(get_profile("full"))}
    sweep = sorted(
        c.params["workers"]
        for c in default
        if c.library == "torch-dataloader" and c.variant == "files-opencv-albumentations"
    )
    assert sweep == [0, 1, 2, 3, 4]
    # the gpu rows run one worker per core of a GPU machine, each with its library's own threads
    assert all(c.params["threads"] == 1 for c in default if c.library != "gpu")
    assert {c.environment for c in default if c.library in ("tf-data", "keras-pydataset")} == {
        "tensorflow"
    }
    assert any("au-sleep" in c.variant for c in default)
    assert len(loader_cases(get_profile("full"))) > len(default)
    assert UNAVAILABLE and all(len(pair) == 2 for pair in UNAVAILABLE)


def test_env_lists_the_loaders() -> None:
    from imgbench.libraries import library_statuses

    loaders = {s.library: s for s in library_statuses() if s.stage == "loader"}
    assert loaders["torch-dataloader"].available
    # DALI's CPU pipeline runs without a GPU: a registered loader, no longer listed unavailable
    assert "NVIDIA DALI" not in loaders and "dali" in loaders


def test_every_loader_has_au_cases() -> None:
    """AU rows for every loader of the default profile (the experiments aside), one per method
    at the first emulated speed for all but the reference loader: few, and no loader's own code."""
    default = get_profile("default")
    plan = default.plan(LoaderPlan)
    all_cases = loader_cases(default)
    au = [c for c in all_cases if "accelerator_images_per_s" in c.params]
    # the gpu rows measure AU against a real ResNet-50 step with CUDA events (docs/gpu.md)
    libraries = {
        c.library for c in all_cases if not c.library.endswith("experiment") and c.library != "gpu"
    }
    assert libraries <= {c.library for c in au}
    others = [c for c in au if c.library != "torch-dataloader"]
    assert {c.params["accelerator_images_per_s"] for c in others} == {plan.au_accelerators[0]}
    assert len(others) == len({(c.library, c.params.get("method")) for c in others})
    methods = {c.params.get("method") for c in others if c.library == "torchdata-nodes"}
    assert methods == {"thread", "process"}
    swept = ("threadpool", "prefetch-generator", "torchdata-nodes")
    assert all(c.params["workers"] == plan.au_workers for c in others if c.library in swept)
