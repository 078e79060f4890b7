"""The decoder supply (imgbench.loaders.supply): one case per full-size JPEG decoder per worker
count, generated from the readers registry; decoders that fail verification are left out with
the reason; one real supply case end to end."""

from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from imgbench.envs import ENVIRONMENTS
from imgbench.loaders.cases import loader_case, loader_cases
from imgbench.loaders.pipeline import PipelineConfig
from imgbench.loaders.plan import LoaderPlan
from imgbench.loaders.supply import (
    in_child,
    left_out,
    prepare_supply,
    supply_cases,
    supply_decoders,
    verification_problem,
)
from imgbench.measure.context import CaseContext
from imgbench.measure.errors import Skip
from imgbench.profiles import get_profile
from imgbench.readers.base import JPEG_ONLY, BytesReader, ReaderSpec
from imgbench.readers.libs.pillow import PillowReader
from imgbench.readers.registry import find_spec, readers

HERE = "tests.loaders.test_supply"


class SwappedChannels(BytesReader):
    """A real decoder with a real bug: Pillow's pixels handed back in BGR order."""

    def decode(self, data: bytes) -> np.ndarray:
        return np.ascontiguousarray(PillowReader().decode(data)[..., ::-1])


class NeedsADevice(BytesReader):
    def __init__(self) -> None:
        raise RuntimeError("no such device on this machine")


def _spec(variant: str, adapter: str) -> ReaderSpec:
    return ReaderSpec(
        library="test", variant=variant, adapter=f"{HERE}:{adapter}", codecs=JPEG_ONLY
    )


def test_one_case_per_jpeg_decoder_per_worker_count() -> None:
    profile = get_profile("default")
    plan = profile.plan(LoaderPlan)
    assert plan.supply_decoders == "all"
    counts = plan.supply_worker_counts()
    cores = os.cpu_count() or 2
    assert counts == (0, cores)  # make bench: 1 worker repeats 0 workers' column (profiles.py)
    assert get_profile("full").plan(LoaderPlan).supply_worker_counts() == tuple(range(cores + 1))
    decoders = supply_decoders("all")
    keys = {s.key for s in decoders}
    # every full-size JPEG reader of the main env, from the registry (none listed by hand)
    expected = {
        s.key
        for s in readers()
        if "jpeg" in s.codecs
        and s.output == "full"
        and (s.environment == "main" or ENVIRONMENTS[s.environment].layered)
        and "cuda" not in s.variant
        and not s.batched
    }
    assert keys == expected and {"simplejpeg/decode-jpeg", "pyturbojpeg/decode-rgb"} <= keys
    cases = loader_cases(profile)
    assert len({c.case_id for c in cases}) == len(cases)
    plain = [
        c
        for c in cases
        if c.library == "torch-dataloader"
        and "+" not in c.variant
        and c.params["pipeline"] == "albumentations/numpy:train-classification"
        and c.params["format"] == "files"
    ]
    for key in keys:
        found = sorted(c.params["workers"] for c in plain if c.params["decoder"] == key)
        assert set(counts) <= set(found), key
        assert len(found) == len(set(found)), key  # the sweep's own decoder is not run twice
    supply = [c for c in cases if c.prepare is prepare_supply]
    assert {c.params["decoder"] for c in supply} == keys - {"opencv/imdecode-rgb"}
    assert {c.environment for c in supply if c.params["decoder"].startswith("pillow-simd/")} == {
        "pillow-simd"
    }
    # decoders of one library are told apart in the variant (curves never mix)
    assert {c.variant for c in supply if c.params["decoder"].startswith("opencv/")} == {
        "files-opencv.imdecode-cvtcolor-albumentations"
    }
    assert {c.variant for c in supply if c.params["decoder"] == "simplejpeg/decode-jpeg"} == {
        "files-simplejpeg-albumentations"
    }


def test_off_in_quick_and_on_the_extra_datasets_and_allocator_sessions() -> None:
    assert get_profile("quick").plan(LoaderPlan).supply_decoders == ()
    default = get_profile("default")
    for profile in (default.on_extra_dataset(), default.in_allocator_session()):
        assert not [c for c in loader_cases(profile) if c.prepare is prepare_supply]
    plan = dataclasses.replace(
        get_profile("quick").plan(LoaderPlan), supply_decoders=("simplejpeg",), supply_workers=(0,)
    )
    [case] = supply_cases("torch-dataloader", plan)
    assert case.params["decoder"] == "simplejpeg/decode-jpeg" and case.params["workers"] == 0


def test_left_out_with_the_reason() -> None:
    reasons = dict(left_out())
    assert reasons["pillow/draft"] == "reduced output, not the full image"
    assert reasons["opencv/resize-area"] == "resize output, not the full image"
    # pillow-simd's env is layered over the main env: its DataLoader runs there, in its session
    assert "pillow-simd/open-convert" in {s.key for s in supply_decoders("all")}
    assert reasons["tensorflow/decode-jpeg"].startswith("runs in the tensorflow environment")
    assert "GPU" in reasons["torchvision/decode-jpeg-cuda"]
    batched = [s.key for s in readers() if s.batched]
    assert all(reasons[key].startswith("a batched call") for key in batched)
    assert not set(reasons) & {s.key for s in supply_decoders("all")}


def test_a_decoder_that_fails_verification_is_left_out(photo_ctx: CaseContext) -> None:
    assert verification_problem(photo_ctx, _spec("pillow", "PillowReader")) is None
    problem = verification_problem(photo_ctx, _spec("bgr", "SwappedChannels"))
    assert problem is not None
    assert problem.startswith("failed verification against the reference decode on class_")
    assert "BGR order" in problem
    problem = verification_problem(photo_ctx, _spec("device", "NeedsADevice"))
    assert problem == "cannot be built here: RuntimeError: no such device on this machine"


def test_a_decoder_that_crashes_or_raises_is_a_reason() -> None:
    """Verification runs in a forked child: a crash or an exception is the skip's reason."""
    assert in_child(lambda: None) is None
    assert in_child(lambda: "wrong pixels") == "wrong pixels"
    assert in_child(lambda: os._exit(3)) == (
        "the decoder killed the verifying process (exit code 3)"
    )

    def raises() -> str | None:
        raise ZeroDivisionError("division by zero")

    def hangs() -> str | None:
        time.sleep(30)
        return None

    assert in_child(raises) == "verification raised ZeroDivisionError: division by zero"
    assert in_child(hangs, timeout_s=1) == "verification did not finish in 1 s"


def test_a_supply_case_skips_with_the_reason(photo_ctx: CaseContext) -> None:
    if torch.cuda.is_available():
        pytest.skip("nvjpeg builds on this machine: no decoder here fails to build")
    plan = get_profile("quick").plan(LoaderPlan)
    config = PipelineConfig(decoder="torchvision/decode-jpeg-cuda")
    case = loader_case("torch-dataloader", 0, plan=plan, config=config, prepare=prepare_supply)
    with pytest.raises(Skip, match=r"^torchvision/decode-jpeg-cuda left out of the loader supply"):
        case.prepare(photo_ctx, case)


@pytest.mark.parametrize(
    ("decoder", "workers"),
    [
        ("simplejpeg/decode-jpeg", 0),
        # verified in a child: a decode in the loader's process left forked workers deadlocked
        ("pyvips/new-from-buffer", 1),
    ],
)
def test_a_supply_case_end_to_end(
    photo_ctx: CaseContext, photo_dir: Path, decoder: str, workers: int
) -> None:
    """A decoder inside the DataLoader: verified, then real batches."""
    plan = dataclasses.replace(
        get_profile("quick").plan(LoaderPlan), supply_decoders=(decoder,), supply_workers=(workers,)
    )
    [case] = supply_cases("torch-dataloader", plan)
    reason = case.unmet_requirement()
    if reason is not None:
        pytest.skip(reason)
    workload = case.prepare(photo_ctx, case)
    assert workload.close is not None
    try:
        for item in workload.items:
            workload.fn(item)
        batch = next(workload.fn.__self__._iterator)  # type: ignore[attr-defined]
    finally:
        workload.close()
    images = batch[0]
    assert images.shape == (8, 3, 224, 224) and images.dtype == torch.float32
    assert workload.extra["decoder_verified_images"] == len(list(photo_dir.rglob("*.jpg")))
    assert decoder in workload.extra["pipeline"]
    assert find_spec(*decoder.split("/")).dist in workload.extra["pipeline_versions"]
