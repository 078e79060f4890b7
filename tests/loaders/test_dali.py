"""The DALI loader on real JPEGs: its first batch passes the checks every loader's does, its cases
sweep the plan's thread counts, its mixed rows skip without CUDA, bad files are named (no hang),
and a missing DALI skips its cases with the reason."""

from __future__ import annotations

import io
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from imgbench.library import missing_module
from imgbench.loaders import cases
from imgbench.loaders.base import LoaderError, deadline
from imgbench.loaders.libs import dali
from imgbench.loaders.pipeline import FileSource, PipelineConfig, SamplePipeline
from imgbench.loaders.plan import LoaderPlan
from imgbench.measure.context import CaseContext
from imgbench.profiles import get_profile
from tests.loaders.conftest import make_context
from tests.loaders.faults import HangsOnIndex, RaisesOnIndex

QUICK = get_profile("quick").plan(LoaderPlan)
NO_DALI = missing_module("dali", ("nvidia.dali",))
needs_dali = pytest.mark.skipif(NO_DALI is not None, reason=NO_DALI or "")
BAD = ("truncated.jpg", "empty.jpg")  # what DALI cannot read or decode
PNG_AS_JPG = "really-a-png.jpg"  # DALI sniffs the content: decoded as the PNG it is


def _run(ctx: CaseContext, case) -> dict:
    """Prepare the case (first batch checked), pull its timed batches, close; its extra."""
    workload = case.prepare(ctx, case)
    try:
        for item in workload.items:
            assert workload.fn(item) == QUICK.batch_size
    finally:
        workload.close()
    return workload.extra


@needs_dali
@pytest.mark.parametrize(
    ("source", "fmt"),
    [(dali.READER_FILE, "files"), *((dali.EXTERNAL, f) for f in dali.EXTERNAL_FORMATS)],
)
def test_first_batch_passes_the_loader_checks(photo_ctx: CaseContext, source: str, fmt: str):
    extra = _run(photo_ctx, dali.dali_case(QUICK, 2, source=source, fmt=fmt))
    assert extra["first_batch_check"] == "pass"
    first = extra["first_batch"]
    assert first["shape"] == [QUICK.batch_size, 3, 224, 224] and first["dtype"] == "float32"
    assert -2.2 < first["min"] < first["max"] < 2.7 and first["labels"] == [0, 1]
    assert extra["dali_source"] == source and extra["dali_device"] == "cpu"
    assert extra["pipeline_versions"]["nvidia-dali-cuda120"]
    assert extra["workers_alive_after_close"] == []


def test_cases_sweep_the_plans_thread_counts() -> None:
    plan = get_profile("default").plan(LoaderPlan)
    cases = dali.plan_cases(plan)
    cpu_reader = [
        c.params["workers"]
        for c in cases
        if c.params["dali_source"] == dali.READER_FILE
        and c.params["dali_device"] == "cpu"
        and "accelerator_images_per_s" not in c.params
    ]
    assert tuple(cpu_reader) == plan.thread_sweep
    external = {c.params["format"] for c in cases if c.params["dali_source"] == dali.EXTERNAL}
    assert external == set(dali.EXTERNAL_FORMATS)
    assert len({c.case_id for c in cases}) == len(cases)
    assert all(c.params["decoder"] == dali.DECODER for c in cases)
    au = [c for c in cases if "accelerator_images_per_s" in c.params]
    assert [c.params["accelerator_images_per_s"] for c in au] == [plan.au_accelerators[0]]
    assert [c.params["workers"] for c in au] == [plan.au_workers]


def test_the_registry_puts_dali_in_the_default_loader_stage() -> None:
    from imgbench.library import select
    from imgbench.loaders.registry import UNAVAILABLE, get_loader, loaders

    assert get_loader("dali") in select(
        loaders(), get_profile("default").plan(LoaderPlan).libraries
    )
    assert not [name for name, _ in UNAVAILABLE if "DALI" in name]


@pytest.mark.skipif(dali.has_nvidia_device(), reason="an NVIDIA device is present here")
def test_mixed_is_one_row_that_skips_without_cuda() -> None:
    mixed = [c for c in dali.plan_cases(QUICK) if c.params["dali_device"] == "mixed"]
    assert len(mixed) == 1
    assert mixed[0].unmet_requirement() == (
        "dali mixed: no CUDA device on this machine (no /dev/nvidia*)"
    )


def test_a_missing_dali_skips_its_cases_with_the_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    from imgbench.readers.registry import find_spec

    monkeypatch.setitem(sys.modules, "nvidia.dali", None)  # what an import finds without DALI
    case = dali.dali_case(QUICK, 2)
    assert (case.unmet_requirement() or "").startswith("dali: cannot import nvidia.dali (")
    reader = find_spec("dali", "decoders-image")
    assert (reader.unmet_requirement() or "").startswith("dali: cannot import nvidia.dali (")


@needs_dali
@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("wrap", "reason"),
    [
        (RaisesOnIndex, "ValueError: broken sample 3"),
        (HangsOnIndex, "first batch: no batch within 3 s"),
    ],
)
def test_a_source_that_raises_or_hangs_fails_the_case(
    photo_ctx: CaseContext, wrap: type, reason: str
) -> None:
    """The external source's callback runs in the thread that calls ``run()``: its error is
    passed on, and the harness's deadline interrupts a hung one."""
    case = dali.dali_case(QUICK, 2, source=dali.EXTERNAL, batch_timeout_s=1.0)
    with pytest.raises(LoaderError) as failed:
        cases.prepare_loader(photo_ctx, case, wrap=wrap)
    message = str(failed.value)
    assert message.startswith("dali (2 workers): ") and reason in message


@pytest.fixture
def bad_dir(photo_dir: Path, tmp_path: Path) -> Path:
    """The photos plus a truncated JPEG, a zero-byte .jpg and a PNG named .jpg."""
    root = tmp_path / "bad"
    shutil.copytree(photo_dir, root)
    data = next(root.rglob("*.jpg")).read_bytes()
    (root / "class_0" / BAD[0]).write_bytes(data[: len(data) // 2])
    (root / "class_0" / BAD[1]).write_bytes(b"")
    png = io.BytesIO()
    Image.fromarray(np.full((60, 80, 3), 90, np.uint8)).save(png, format="PNG")
    (root / "class_1" / PNG_AS_JPG).write_bytes(png.getvalue())
    return root


@needs_dali
@pytest.mark.timeout(120)
@pytest.mark.parametrize("source", [dali.READER_FILE, dali.EXTERNAL])
def test_bad_files_in_the_pool_are_each_named(bad_dir: Path, source: str) -> None:
    """Files that went bad after the scan (the scan leaves them out): DALI stops the batch, the
    loader names each file it cannot read or decode, within the batch deadline."""
    paths = sorted(str(p) for p in bad_dir.rglob("*.jpg"))
    labels = [0 if "class_0" in p else 1 for p in paths]
    config = PipelineConfig(decoder=dali.DECODER, augment=dali.AUGMENT)
    params = {"batch_size": 4, "workers": 2, "dali_source": source}
    loader = dali.build(SamplePipeline(FileSource(paths, labels), config), params)
    try:
        with pytest.raises(LoaderError) as failed, deadline(90, "dali over bad files"):
            batches = loader.batches()
            for _ in range(4 * len(paths)):  # the bad files come up within an epoch or two
                next(batches)
    finally:
        loader.close()
    message = str(failed.value)
    assert "DALI stops the whole batch" in message and "2 bad in the pool of 19" in message
    for name in BAD:
        assert str(bad_dir / "class_0" / name) in message
    assert PNG_AS_JPG not in message


@needs_dali
def test_the_scan_names_the_bad_files_and_dali_runs_over_the_rest(bad_dir: Path) -> None:
    ctx = make_context(bad_dir, max_images=32)
    bad = {Path(b.path).name: b.reason for b in ctx.dataset.manifest.bad}
    assert set(bad) == set(BAD), bad
    extra = _run(ctx, dali.dali_case(QUICK, 2))
    assert extra["first_batch_check"] == "pass" and extra["images_in_pool"] == 17
