"""Each system as its own authors build it (imgbench.loaders.documented): the as-documented rows
are planned beside the same-recipe ones with their source, pass every loader's first-batch checks
on real photos, and their crop-aware decodes do the same work: a forced window decodes to what
decode-then-crop gives, and the drawn windows follow the recipe's area and aspect ranges."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from imgbench.augment import spec
from imgbench.library import missing_module
from imgbench.loaders import cases
from imgbench.loaders.base import LoaderError, deadline
from imgbench.loaders.documented import AS_DOCUMENTED, ROI, SAME_RECIPE
from imgbench.loaders.libs import dali
from imgbench.loaders.pipeline import FileSource, PipelineConfig, SamplePipeline
from imgbench.loaders.plan import LoaderPlan
from imgbench.loaders.registry import loaders
from imgbench.measure.context import CaseContext
from imgbench.profiles import get_profile
from tests.loaders.windows import check_window_distribution

QUICK = get_profile("quick").plan(LoaderPlan)
DEFAULT = get_profile("default").plan(LoaderPlan)
NO_DALI = missing_module("dali", ("nvidia.dali",))
needs_dali = pytest.mark.skipif(NO_DALI is not None, reason=NO_DALI or "")
DRAWS = 24  # batches of random windows drawn per photo set in the distribution test


def _first_batch(ctx: CaseContext, case) -> dict:
    workload = case.prepare(ctx, case)
    try:
        for item in workload.items[:2]:
            workload.fn(item)
    finally:
        workload.close()
    return workload.extra


def test_every_loader_row_says_its_system_and_how_it_was_built() -> None:
    planned = cases.loader_cases(get_profile("default"))
    loader_rows = [c for c in planned if "configured_as" in c.columns]
    assert {c.library for c in loader_rows} >= {"torch-dataloader", "dali", "spdl", "tf-data"}
    for case in loader_rows:
        assert case.columns["system"]
        documented = case.columns["configured_as"] == AS_DOCUMENTED
        assert documented == (case.params.get("configured_as") == AS_DOCUMENTED)
        assert bool(case.columns["configured_from"]) == documented
    systems = {
        c.columns["system"] for c in loader_rows if c.columns["configured_as"] == AS_DOCUMENTED
    }
    assert {"DALI", "tf.data", "SPDL", "torchdata.nodes"} <= systems
    # the DataLoader's example differs from the common default at one worker per core only by
    # pin_memory: its own row where an NVIDIA device is
    assert ("DataLoader" in systems) == dali.has_nvidia_device()
    assert len({c.case_id for c in planned}) == len(planned)


def test_same_recipe_ids_are_unchanged_and_as_documented_rows_are_their_own_curve() -> None:
    case = cases.loader_case("torch-dataloader", 2, plan=DEFAULT)
    assert "configured_as" not in case.params and case.columns["configured_as"] == SAME_RECIPE
    assert case.columns["crop_decode"] == "full"
    roi = dali.dali_case(DEFAULT, 2, documented=dali.DOCUMENTED)
    plain = dali.dali_case(DEFAULT, 2)
    assert roi.case_id != plain.case_id and roi.variant.endswith("as-documented")
    assert roi.columns["crop_decode"] == ROI and plain.columns["crop_decode"] == "full"
    assert "resnet50" in roi.columns["configured_from"]


def test_the_plan_can_leave_the_as_documented_rows_out() -> None:
    from dataclasses import replace

    profile = get_profile("default")
    plan = replace(profile.plan(LoaderPlan), as_documented=False)
    planned = cases.loader_cases(replace(profile, plans={**profile.plans, "loader": plan}))
    assert not [c for c in planned if c.params.get("configured_as") == AS_DOCUMENTED]
    assert all(s.as_documented is None or s.as_documented.count(":") == 1 for s in loaders())


# -- DALI: fn.decoders.image_random_crop + fn.resize, as its ResNet-50 example --------------------
def _dali_run(files: list[str], build, batches: int = 1) -> list[np.ndarray]:
    from nvidia.dali import fn, types
    from nvidia.dali.pipeline import Pipeline

    pipe = Pipeline(batch_size=len(files), num_threads=2, device_id=None, seed=7)
    with pipe:
        encoded, _ = fn.readers.file(files=files, labels=list(range(len(files))))
        pipe.set_outputs(build(fn, types, encoded))
    pipe.build()
    out: list[np.ndarray] = []
    try:
        for _ in range(batches):
            (images,) = pipe.run()
            out += [np.array(images[i]) for i in range(len(files))]
    finally:
        pipe._shutdown()
    return out


@needs_dali
def test_dali_roi_decode_of_a_forced_window_equals_decode_then_crop(photo_dir: Path) -> None:
    files = sorted(str(p) for p in photo_dir.rglob("*.jpg"))[:6]
    window = (16, 24, 150, 120)  # x, y, w, h: inside every photo (320x240 and 240x320)
    x, y, w, h = window
    roi = _dali_run(files, lambda fn, types, e: dali._roi_crop(fn, types, e, "cpu", window))

    def decode_then_crop(fn, types, encoded):
        images = fn.decoders.image(encoded, output_type=types.RGB, adjust_orientation=False)
        images = fn.slice(images, start=(x, y), shape=(w, h), axis_names="WH")
        return fn.resize(
            images, resize_x=spec.SIZE, resize_y=spec.SIZE, interp_type=types.INTERP_TRIANGULAR
        )

    full = _dali_run(files, decode_then_crop)
    for a, b in zip(roi, full, strict=True):
        assert a.shape == b.shape == (spec.SIZE, spec.SIZE, 3)
        diff = np.abs(a.astype(np.int16) - b.astype(np.int16))
        # libjpeg-turbo's partial decode upsamples chroma at the window's edge from its own
        # neighbours: a grey level or two there, none inside
        assert diff.mean() < 0.5 and np.percentile(diff, 99) <= 3, (diff.mean(), diff.max())


@needs_dali
def test_dali_roi_windows_follow_the_recipes_area_and_aspect(photo_dir: Path) -> None:
    files = sorted(str(p) for p in photo_dir.rglob("*.jpg"))
    from PIL import Image

    sizes = [Image.open(f).size for f in files]  # (W, H)
    crops = _dali_run(files, lambda fn, types, e: dali.roi_decode(fn, types, e, "cpu"), DRAWS)
    areas, aspects = [], []
    for i, crop in enumerate(crops):
        width, height = sizes[i % len(files)]
        areas.append(crop.shape[0] * crop.shape[1] / (width * height))
        aspects.append(crop.shape[1] / crop.shape[0])
    check_window_distribution(np.array(areas), np.array(aspects), sizes)


@needs_dali
def test_dali_as_documented_first_batch_passes_the_loader_checks(photo_ctx: CaseContext) -> None:
    extra = _first_batch(photo_ctx, dali.dali_case(QUICK, 2, documented=dali.DOCUMENTED))
    assert extra["first_batch_check"] == "pass" and extra["dali_decode"] == dali.ROI_DECODE
    assert extra["dali_iterator"] == dali.GENERIC_ITERATOR
    first = extra["first_batch"]
    assert first["shape"] == [QUICK.batch_size, 3, 224, 224] and first["dtype"] == "float32"
    assert -2.2 < first["min"] < first["max"] < 2.7


@needs_dali
@pytest.mark.timeout(120)
def test_dali_as_documented_names_a_truncated_and_a_zero_byte_file(
    photo_dir: Path, tmp_path: Path
) -> None:
    root = tmp_path / "bad"
    shutil.copytree(photo_dir, root)
    data = next(root.rglob("*.jpg")).read_bytes()
    (root / "class_0" / "truncated.jpg").write_bytes(data[: len(data) // 3])
    (root / "class_0" / "empty.jpg").write_bytes(b"")
    paths = sorted(str(p) for p in root.rglob("*.jpg"))
    labels = [0 if "class_0" in p else 1 for p in paths]
    config = PipelineConfig(decoder=dali.DECODER, augment=dali.AUGMENT)
    params = {"batch_size": 4, "workers": 2, **dali.DOCUMENTED.params}  # generic iterator
    loader = dali.build(SamplePipeline(FileSource(paths, labels), config), params)
    try:
        with pytest.raises(LoaderError) as failed, deadline(90, "dali roi over bad files"):
            batches = loader.batches()
            for _ in range(4 * len(paths)):
                next(batches)
    finally:
        loader.close()
    message = str(failed.value)
    assert str(root / "class_0" / "empty.jpg") in message, message
    assert str(root / "class_0" / "truncated.jpg") in message, message


# -- SPDL's per-batch tasks, torchdata.nodes' batch map, the DataLoader of PyTorch's example ------
def _documented_case(library: str, **kw):  # type: ignore[no-untyped-def]
    from imgbench.loaders.libs import torch_dataloader
    from imgbench.loaders.registry import get_loader, pipeline_config
    from imgbench.stages import load_attr

    if library == "torch-dataloader":  # its row without a GPU is the common default's
        config = pipeline_config(torch_dataloader.DOCUMENTED_PIPELINE)
        return cases.loader_case(
            library, 2, plan=QUICK, config=config, documented=torch_dataloader.DOCUMENTED
        )
    planned = load_attr(get_loader(library).as_documented)(QUICK)
    return next(c for c in planned if all(c.params.get(k) == v for k, v in kw.items()))


@pytest.mark.timeout(180)
@pytest.mark.parametrize(
    ("library", "select", "key", "value"),
    [
        # the DataLoader first: a fork after torchdata.nodes' process workers ran in the same
        # interpreter failed in the child's first import under pytest's assertion rewriting
        # ("AST constructor recursion depth mismatch", CPython 3.11.7), with the same-recipe
        # torchdata row too; the engine runs every case in a fresh fork, so rows never meet it
        ("torch-dataloader", {}, "pipeline", "torchvision/v2-pil:train-classification"),
        ("spdl", {"decoder": "opencv/imdecode-rgb"}, "spdl_shape", "per-batch"),
        ("torchdata-nodes", {"method": "thread"}, "torchdata_shape", "batch-map"),
        ("torchdata-nodes", {"method": "process"}, "torchdata_shape", "batch-map"),
    ],
)
def test_as_documented_first_batch_passes_the_loader_checks(
    photo_ctx: CaseContext, library: str, select: dict, key: str, value: object
) -> None:
    pytest.importorskip("spdl.pipeline" if library == "spdl" else "torch")
    if library == "torchdata-nodes":
        pytest.importorskip("torchdata.nodes")
    case = _documented_case(library, **select)
    assert case.params[key] == value and case.columns["configured_as"] == AS_DOCUMENTED
    extra = _first_batch(photo_ctx, case)
    assert extra["first_batch_check"] == "pass", extra.get("first_batch_check")
    first = extra["first_batch"]
    assert first["shape"] == [QUICK.batch_size, 3, 224, 224] and first["dtype"] == "float32"
    assert extra["workers_alive_after_close"] == []
    if key.endswith("_shape"):  # the loader says which shape it ran
        assert extra[key] == value


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    ("library", "params"),
    [
        ("spdl", {"spdl_shape": "per-batch"}),
        ("torchdata-nodes", {"torchdata_shape": "batch-map", "method": "thread"}),
        ("torchdata-nodes", {"torchdata_shape": "batch-map", "method": "process"}),
    ],
)
def test_per_batch_shapes_name_a_zero_byte_file(
    photo_dir: Path, tmp_path: Path, library: str, params: dict
) -> None:
    from tests.loaders.bad_files import first_error, folder

    pytest.importorskip("spdl.pipeline" if library == "spdl" else "torchdata.nodes")
    root = tmp_path / "empty"
    error = first_error(library, "default", folder(root, photo_dir, "empty.jpg"), params)
    assert error is not None and str(root / "empty.jpg") in error, error


# -- crop-aware decodes through the plan (imgbench.loaders.crop_decode) ----------------------------
def test_the_default_plan_runs_each_crop_aware_decoder() -> None:
    planned = cases.loader_cases(get_profile("default"))
    crop = {c.params["crop_decode"] for c in planned if "crop_decode" in c.params}
    assert crop == {"roi", "roi-reduced", "reduced"}
    for case in planned:
        if "crop_decode" in case.params:
            assert case.columns["crop_decode"] == case.params["crop_decode"]
            assert case.variant.endswith(f"+{case.params['crop_decode']}-decode")


@pytest.mark.timeout(120)
def test_a_crop_aware_case_decodes_the_window_it_says(photo_ctx: CaseContext) -> None:
    from imgbench.loaders.registry import pipeline_config

    pytest.importorskip("turbojpeg")
    # 0 workers: the forks are tests/loaders/test_crop_decode.py's (a DataLoader fork after
    # torchdata.nodes' process workers in this interpreter fails under pytest's rewriting, above)
    case = cases.loader_case(
        "torch-dataloader", 0, plan=QUICK, config=pipeline_config("turbojpeg-roi")
    )
    extra = _first_batch(photo_ctx, case)
    assert extra["first_batch_check"] == "pass"
    assert "[roi decode]" in extra["pipeline"], extra["pipeline"]
