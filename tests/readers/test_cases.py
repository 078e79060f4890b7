"""Reader cases per profile, and their workloads on a real folder: verification, modes, cache."""

from __future__ import annotations

import io
import json
import types
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from imgbench.controls import case_context
from imgbench.measure.cache import resident_fraction
from imgbench.measure.case import Case
from imgbench.measure.context import CaseContext
from imgbench.measure.errors import Skip
from imgbench.profiles import get_profile
from imgbench.readers.cases import reader_cases
from imgbench.readers.pixels import to_rgb8
from tests.readers.images import PHOTOS, photo, photo_bytes


def _ids(cases: list[Case]) -> list[str]:
    return [c.test_id for c in cases]


def test_quick_is_small_memory_single_thread_jpeg_png() -> None:
    cases = reader_cases(get_profile("quick"))
    assert {c.params["mode"] for c in cases} == {"memory"}
    assert {c.threads for c in cases} == {1}
    assert {c.params["codec"] for c in cases} == {"jpeg", "png"}
    assert {c.stage for c in cases} == {"read"} and {c.environment for c in cases} == {"main"}
    assert {"pillow", "opencv"} <= {c.library for c in cases} and len(cases) <= 12


def test_default_covers_modes_envs_reduced_and_native() -> None:
    cases = reader_cases(get_profile("default"))
    assert len(set(_ids(cases))) == len(cases) and len({c.case_id for c in cases}) == len(cases)
    assert not any("default" in c.case_id.replace("threads=default", "") for c in cases)
    modes = {(c.params["mode"], c.params.get("cache_state"), c.threads) for c in cases}
    assert {("memory", None, 1), ("disk", "warm", 1), ("disk", "cold", 1)} <= modes
    # make bench reads JPEG from disk and every codec from memory, one thread
    disk = {c.params["codec"] for c in cases if c.params["mode"] == "disk"}
    assert disk == {"jpeg"} and {c.params["codec"] for c in cases} == {"jpeg", "png", "webp"}
    assert {c.environment for c in cases} == {"main", "pillow-simd", "tensorflow", "mxnet"}
    assert {c.dist for c in cases if c.environment == "pillow-simd"} == {"pillow-simd"}
    reduced = [c for c in cases if "reduce" in c.params]
    assert {c.params["reduce"] for c in reduced} == {4}
    assert {c.library for c in reduced} >= {"pillow", "opencv", "simplejpeg", "pyturbojpeg"}
    native = [c for c in cases if c.stage == "native"]
    assert {c.library for c in native} == {"tjbench"} and len(native) == 2
    full = reader_cases(get_profile("full"))
    assert {c.params.get("reduce") for c in full} == {None, 2, 4} and len(full) > len(cases)
    full_modes = {(c.params["mode"], c.params.get("cache_state"), c.threads) for c in full}
    assert ("memory", None, None) in full_modes and ("disk", "warm", None) in full_modes
    assert {c.params["codec"] for c in full if c.params["mode"] == "disk"} >= {"png", "tiff"}


def test_unsupported_codec_is_a_skip_reason() -> None:
    cases = reader_cases(get_profile("default"))
    case = next(c for c in cases if c.library == "simplejpeg" and c.params["codec"] == "png")
    assert case.unmet_requirement() == "simplejpeg/decode-jpeg does not decode png"
    cuda = next(c for c in cases if c.variant == "decode-jpeg-cuda")
    import torch

    if not torch.cuda.is_available():
        assert "CUDA is not available" in (cuda.unmet_requirement() or "")


# -- workloads on a real folder ---------------------------------------------------------------


def _context(root: Path, profile: str = "default") -> CaseContext:
    try:
        from imgbench.datasets import load_dataset
    except ImportError:  # the datasets package is not finished: the same manifest, by scan
        from imgbench.datasets.scan import scan

        dataset = types.SimpleNamespace(name=root.name, manifest=scan(root, use_cache=False))
    else:
        dataset = load_dataset(str(root))
    return case_context(dataset, get_profile(profile), max_images=16)


@pytest.fixture(scope="module")
def photo_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Real photos as JPEG and PNG, plus a CMYK JPEG that some readers refuse."""
    root = tmp_path_factory.mktemp("photos", numbered=True)
    for name in PHOTOS:
        (root / f"{name}.jpg").write_bytes(photo_bytes(name, "jpeg"))
        (root / f"{name}.png").write_bytes(photo_bytes(name, "png"))
    buffer = io.BytesIO()
    Image.fromarray(photo("coffee")).convert("CMYK").save(buffer, "JPEG", quality=90)
    (root / "zz_cmyk.jpg").write_bytes(buffer.getvalue())
    return root


def _case(library: str, variant: str, **params) -> Case:
    cases = reader_cases(get_profile("full"))
    for case in cases:
        if (case.library, case.variant) == (library, variant) and all(
            case.params.get(k) == v for k, v in params.items()
        ):
            return case
    raise LookupError(f"{library}/{variant} {params}")


def test_memory_workload_decodes_verified_images(photo_folder: Path) -> None:
    ctx = _context(photo_folder)
    case = _case("opencv", "imdecode-rgb", codec="jpeg", mode="memory", threads=1)
    work = case.prepare(ctx, case)
    assert len(work.items) == 4 and work.extra["excluded_images"] == []
    assert work.bytes_per_round == sum(len(d) for d in work.items)
    assert work.megapixels_per_round == pytest.approx(
        sum(photo(n).shape[0] * photo(n).shape[1] for n in PHOTOS) / 1e6 + 0.24
    )
    out = work.fn(work.items[0])
    assert out.dtype == np.uint8 and out.flags.c_contiguous and out.shape[2] == 3
    json.dumps(work.extra)


def test_images_failing_verification_are_excluded_with_the_reason(photo_folder: Path) -> None:
    ctx = _context(photo_folder)
    case = _case("pyturbojpeg", "decode-rgb", codec="jpeg", mode="memory", threads=1)
    if case.unmet_requirement():
        pytest.skip(case.unmet_requirement())
    work = case.prepare(ctx, case)
    assert len(work.items) == 3
    (excluded,) = work.extra["excluded_images"]
    assert excluded["path"] == "zz_cmyk.jpg"
    assert "Unsupported color conversion" in excluded["reason"]


def test_reduced_workload_counts_output_pixels(photo_folder: Path) -> None:
    ctx = _context(photo_folder)
    case = _case("pillow", "draft", codec="jpeg", reduce=4, threads=1)
    work = case.prepare(ctx, case)
    assert work.extra["target"] == "ceil(width/4) x ceil(height/4)"
    assert work.extra["output"] == "reduced"
    expected = sum(-(-photo(n).shape[0] // 4) * -(-photo(n).shape[1] // 4) for n in PHOTOS)
    assert work.megapixels_per_round == pytest.approx((expected + 100 * 150) / 1e6)


def test_disk_warm_and_cold_control_the_page_cache(photo_folder: Path) -> None:
    ctx = _context(photo_folder)
    warm_case = _case("pillow", "open-convert", codec="png", mode="disk", cache_state="warm")
    work = warm_case.prepare(ctx, warm_case)
    paths = [Path(p) for p in work.items]
    assert all(p.is_file() for p in paths) and work.before_round is not None
    work.before_round()
    assert work.cache is not None and work.cache_method is None
    assert resident_fraction(paths) > 0.9 and "read before each round" in work.cache.method
    cold_case = _case("pillow", "open-convert", codec="png", mode="disk", cache_state="cold")
    work = cold_case.prepare(ctx, cold_case)
    work.before_round()
    assert resident_fraction(paths) <= 0.02
    assert work.cache is not None
    assert work.cache.method.startswith("posix_fadvise(DONTNEED) before every round")
    arrays = [work.fn(p) for p in work.items]  # the timed call reads from disk and decodes
    assert [a.shape for a in arrays] == [photo(p.stem).shape for p in paths]  # the sample's order
    assert work.cache.extra()["resident_after_evict_max"] <= 0.02


def test_cold_cache_on_tmpfs_is_skipped_with_the_reason(tmp_path: Path) -> None:
    shm = Path("/dev/shm")
    if not shm.is_dir():
        pytest.skip("no /dev/shm tmpfs here")
    import tempfile

    with tempfile.TemporaryDirectory(dir=shm) as folder:
        root = Path(folder)
        (root / "a.png").write_bytes(photo_bytes("coffee", "png"))
        ctx = _context(root)
        case = _case("pillow", "open-convert", codec="png", mode="disk", cache_state="cold")
        with pytest.raises(Skip, match="cold cache impossible here"):
            case.prepare(ctx, case)


def test_no_images_of_the_codec_is_a_skip(photo_folder: Path) -> None:
    ctx = _context(photo_folder)
    case = _case("pillow", "open-convert", codec="webp", mode="memory", threads=1)
    with pytest.raises(Skip, match="has no webp images"):
        case.prepare(ctx, case)


def test_tjbench_workload_times_itself(photo_folder: Path) -> None:
    case = next(c for c in reader_cases(get_profile("default")) if c.library == "tjbench")
    if case.unmet_requirement():
        pytest.skip(case.unmet_requirement())
    work = case.prepare(_context(photo_folder), case)
    assert work.self_timed and len(work.items) == 4  # tjbench decodes CMYK (to CMYK) too
    assert work.extra["excluded_images"] == [] and work.extra["verified_images"] == 4
    seconds = work.fn(work.items[0])
    assert 0 < seconds < 1


def test_to_rgb8_policy() -> None:
    gray16 = np.array([[0, 255, 256, 65535]], np.uint16)
    assert to_rgb8(gray16)[0, :, 0].tolist() == [0, 0, 1, 255]
    rgba = np.zeros((2, 2, 4), np.uint8)
    rgba[..., 3] = 9
    assert to_rgb8(rgba).shape == (2, 2, 3) and to_rgb8(rgba).max() == 0
    with pytest.raises(ValueError, match="sample type"):
        to_rgb8(np.zeros((2, 2), np.float32))


def test_the_native_ceiling_keeps_the_runner_and_a_reader_gets_its_stage_facts() -> None:
    """The registry stamps a read case with its stage's facts (a worker fork, the dataset's disk);
    tjbench's ``native`` case, which the readers plan, keeps the defaults: the worker's planner
    plans only registered stages, so it runs in the runner's process (make bench's tjbench rows
    failed with "unknown stage 'native'" when it was stamped like a reader)."""
    from imgbench.stages import stage_cases

    cases = stage_cases("read", get_profile("default"))
    native = [c for c in cases if c.stage == "native"]
    reader = next(c for c in cases if c.library == "pillow")
    assert native and all(not c.in_worker and c.disk == "none" and c.task is None for c in native)
    assert reader.in_worker and reader.disk == "dataset" and not reader.screen
