"""Crop-aware decode (imgbench.loaders.crop_decode) on real photos: a forced window decodes to
what decode-then-crop gives, the windows follow torchvision's draw, the pipelines' first batches
pass the loader's check at 0 and 2 workers, and bad files are named (a PNG falls back)."""

from __future__ import annotations

import io
import random
from pathlib import Path

import numpy as np
import pytest

from imgbench.loaders.checks import check_batch, expectation
from imgbench.loaders.crop_decode import (
    ROI,
    Window,
    build_crop_decoder,
    draw_window,
    jpeg_size,
    non_jpeg_files,
    reduce_factor,
    window_resize,
)
from imgbench.loaders.pipeline import (
    ARRAY,
    FileSource,
    PipelineConfig,
    SamplePipeline,
    handoff,
)
from imgbench.loaders.registry import NAMED_PIPELINES, get_loader, pipeline_config
from imgbench.readers.registry import build_reader, find_spec
from tests.loaders.bad_files import BAD_FILES, first_error, folder

# the crop-aware named pipelines: (name, decoder, crop_decode)
CROP_PIPELINES = {
    "turbojpeg-roi": ("pyturbojpeg/decode-rgb", "roi"),
    "turbojpeg-reduced": ("pyturbojpeg/decode-rgb", "reduced"),
    "turbojpeg-roi-reduced": ("pyturbojpeg/decode-rgb", "roi-reduced"),
    "pillow-reduced": ("pillow/open-convert", "reduced"),
    "opencv-reduced": ("opencv/imdecode-rgb", "reduced"),
    "nvimgcodec-roi": ("nvimgcodec/cpu", "roi"),
}
# Tolerances, mean absolute difference in grey levels of the 224x224 uint8 resize of the window.
# roi: the same DCT blocks decoded, so the same pixels, except where libjpeg's fancy chroma
# upsampling meets the cropped JPEG's border (it replicates the edge instead of interpolating
# with the neighbours outside): measured 0.003 at most (max 9 levels, a few pixels).
ROI_MEAN = 0.05
# reduced: libjpeg's DCT scaling (an s x s average in the DCT domain) then INTER_AREA from the
# smaller image, against INTER_AREA alone from the full one: two antialiasing filters, not one,
# on the same window (snapped to the 1/s grid); measured 0.29-1.84 on these photos (max 55
# levels at sharp edges). 3 levels leaves room for other content without hiding a shifted or
# wrong window (a window off by s/2 pixels measured 3.8 on the astronaut).
REDUCED_MEAN = 3.0


def _jpeg(pixels: np.ndarray, size: tuple[int, int] | None = None, **save: object) -> bytes:
    from PIL import Image

    image = Image.fromarray(pixels)
    if size is not None:
        image = image.resize(size, Image.Resampling.BICUBIC)
    out = io.BytesIO()
    image.save(out, format="JPEG", quality=90, **save)
    return out.getvalue()


@pytest.fixture(scope="module")
def photos() -> dict[str, bytes]:
    """Real photos at their own sizes (skimage.data, q90), large enough for 1/2 and 1/4, one
    upscaled for 1/8, and the layouts the MCU alignment meets: grey, 4:4:4, 4:2:2, progressive."""
    import skimage.data as data

    return {
        "astronaut-512": _jpeg(data.astronaut()),
        "hubble-1000x872": _jpeg(data.hubble_deep_field()),
        "retina-1411": _jpeg(data.retina()),
        "astronaut-2048-upscaled": _jpeg(data.astronaut(), (2048, 2048)),
        "camera-grey-512": _jpeg(data.camera()),
        "coffee-444": _jpeg(data.coffee(), subsampling=0),
        "rocket-422": _jpeg(data.rocket(), subsampling=1),
        "chelsea-progressive": _jpeg(data.chelsea(), progressive=True),
    }


def _windows(width: int, height: int) -> list[Window]:
    """The whole image, odd offsets to the edges, an interior window, a small one, a corner."""
    return [
        Window(0, 0, width, height),
        Window(3, 5, width - 3, height - 5),
        Window(width // 7 + 1, height // 5 + 3, width // 2 + 1, height // 2 - 1),
        Window(17, 9, 100, 90),
        Window(width - 230, height - 250, 230, 250),
    ]


def _config(name: str) -> PipelineConfig:
    decoder, mode = CROP_PIPELINES[name]
    return PipelineConfig(decoder=decoder, crop_decode=mode)  # type: ignore[arg-type]


# -- the configuration --------------------------------------------------------------------------
def test_named_pipelines_and_labels() -> None:
    for name, (decoder, mode) in CROP_PIPELINES.items():
        config = pipeline_config(name)
        assert (config.decoder, config.crop_decode) == (decoder, mode)
        assert config.label.endswith(
            f"{decoder} [{mode} decode] > albumentations/numpy:train-classification"
        )
        assert handoff(config) == ARRAY
    # the full pipelines keep their labels (case ids and rows do not change)
    assert NAMED_PIPELINES["default"].label == (
        "files > opencv/imdecode-rgb > albumentations/numpy:train-classification"
    )
    assert all(
        c.crop_decode == "full" for n, c in NAMED_PIPELINES.items() if n not in CROP_PIPELINES
    )
    with pytest.raises(ValueError, match="crop_decode"):
        PipelineConfig(crop_decode="partial")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="needs a classification recipe"):
        PipelineConfig(augment="none", crop_decode=ROI)
    with pytest.raises(ValueError, match="offers no roi decode: Pillow decodes a JPEG whole"):
        build_crop_decoder(PipelineConfig(decoder="pillow/open-convert", crop_decode=ROI))
    with pytest.raises(ValueError, match="starts from a full decode"):
        build_crop_decoder(PipelineConfig(decoder="pyturbojpeg/reduced", crop_decode=ROI))


def test_header_sizes(photos: dict[str, bytes]) -> None:
    from PIL import Image

    for data in photos.values():
        with Image.open(io.BytesIO(data)) as image:
            assert jpeg_size(data) == image.size
    with pytest.raises(ValueError, match=r"not a JPEG marker|no JPEG frame"):
        jpeg_size(b"\xff\xd8\x00\x00garbage")


# -- 1. a forced window: crop-aware == decode-then-crop-then-resize -----------------------------
@pytest.mark.parametrize("name", list(CROP_PIPELINES))
def test_forced_window_matches_decode_then_crop(name: str, photos: dict[str, bytes]) -> None:
    config = _config(name)
    reference = build_reader(find_spec(*config.decoder.split("/", 1)))  # the same library
    resize = window_resize()
    reduced = config.crop_decode != ROI
    tolerance = REDUCED_MEAN if reduced else ROI_MEAN
    scales: set[int] = set()
    for photo, data in photos.items():
        full = reference.decode(data)
        height, width = full.shape[:2]
        for forced in _windows(width, height):
            decoder = build_crop_decoder(config, draw=lambda w, h, f=forced: f)
            got = decoder(data)
            window = decoder.last_window
            assert window is not None
            scale = reduce_factor(forced) if reduced else 1
            scales.add(scale)
            if scale == 1:
                assert window == forced and got.shape == (forced.height, forced.width, 3)
            else:  # its edges moved onto the 1/s grid, by s/2 at most
                assert got.shape[:2] == (-(-window.height // scale), -(-window.width // scale))
                assert min(got.shape[:2]) >= 224  # the resize still shrinks
                edges = np.subtract(
                    [
                        window.left,
                        window.top,
                        window.left + window.width,
                        window.top + window.height,
                    ],
                    [
                        forced.left,
                        forced.top,
                        forced.left + forced.width,
                        forced.top + forced.height,
                    ],
                )
                assert np.abs(edges).max() <= scale / 2
            assert decoder.info()[f"crop_decode_scale_1/{scale}"] == 1
            expected = full[
                window.top : window.top + window.height, window.left : window.left + window.width
            ]
            diff = np.abs(resize(got).astype(np.int16) - resize(expected).astype(np.int16))
            assert diff.mean() < tolerance, (photo, forced, window, diff.mean(), diff.max())
    assert scales == ({1, 2, 4, 8} if reduced else {1})


def test_roi_decodes_the_same_pixels(photos: dict[str, bytes]) -> None:
    """Before any resize: PyTurboJPEG's lossless crop of an unaligned window, and
    nvImageCodec's region, decode the same pixels as the full decode, but for the few that the
    chroma upsampling puts at the cropped stream's border."""
    for name in ("turbojpeg-roi", "nvimgcodec-roi"):
        config = _config(name)
        reference = build_reader(find_spec(*config.decoder.split("/", 1)))
        for data in photos.values():
            full = reference.decode(data)
            height, width = full.shape[:2]
            for forced in _windows(width, height):
                got = build_crop_decoder(config, draw=lambda w, h, f=forced: f)(data)
                box = full[
                    forced.top : forced.top + forced.height,
                    forced.left : forced.left + forced.width,
                ]
                assert (got != box).mean() < 0.01


# -- 2. the windows follow torchvision's RandomResizedCrop.get_params --------------------------
@pytest.mark.parametrize("size", [(320, 240), (240, 320), (1000, 872), (2000, 300)])
def test_window_distribution_matches_torchvision(size: tuple[int, int]) -> None:
    import torch
    from torchvision.transforms import RandomResizedCrop

    from imgbench.augment import spec

    width, height = size
    draws = 2000  # 400 leaves the share's difference at 0.02 +- 0.02: 0.0875 seen, seed 0
    rng = random.Random(0)
    ours = [draw_window(width, height, rng) for _ in range(draws)]
    torch.manual_seed(0)
    image = torch.empty(3, height, width)
    theirs = []
    for _ in range(draws):
        top, left, h, w = RandomResizedCrop.get_params(
            image, list(spec.RRC_SCALE), list(spec.RRC_RATIO)
        )
        theirs.append(Window(left, top, w, h))

    def area(windows: list[Window]) -> np.ndarray:
        return np.array([w.width * w.height / (width * height) for w in windows])

    assert abs(area(ours).mean() - area(theirs).mean()) < 0.05
    assert abs((area(ours) < 0.264).mean() - (area(theirs) < 0.264).mean()) < 0.08
    for w in ours:  # inside the image, area and aspect in range up to the rounding of a pixel
        assert 0 <= w.left <= width - w.width and 0 <= w.top <= height - w.height
        assert w.width * w.height >= spec.RRC_SCALE[0] * width * height - (w.width + w.height)
        low, high = spec.RRC_RATIO
        assert (w.width - 0.5) / (w.height + 0.5) <= high
        assert (w.width + 0.5) / (w.height - 0.5) >= low


def test_no_fitting_draw_falls_back_as_torchvision() -> None:
    """An image too wide for any draw: the whole height at the widest ratio, centred."""
    import torch
    from torchvision.transforms import RandomResizedCrop

    from imgbench.augment import spec

    top, left, h, w = RandomResizedCrop.get_params(
        torch.empty(3, 10, 1000), list(spec.RRC_SCALE), list(spec.RRC_RATIO)
    )
    assert (
        draw_window(1000, 10, random.Random(0)) == Window(left, top, w, h) == Window(493, 0, 13, 10)
    )


def test_reduce_keeps_the_output_side() -> None:
    assert reduce_factor(Window(0, 0, 449, 2000)) == 1  # 449 / 2 - 1 < 224
    assert reduce_factor(Window(0, 0, 450, 2000)) == 2
    assert reduce_factor(Window(0, 0, 900, 901)) == 4
    assert reduce_factor(Window(0, 0, 1800, 1800)) == 8


# -- 3. first batches through the DataLoader ----------------------------------------------------
def _first_batch(name: str, root: Path, workers: int) -> tuple[object, SamplePipeline]:
    paths = sorted(str(p) for p in root.rglob("*.jpg"))
    labels = [
        int(Path(p).parent.name[-1]) if Path(p).parent.name[-1].isdigit() else 0 for p in paths
    ]
    pipeline = SamplePipeline(FileSource(paths, labels), pipeline_config(name))
    loader = (
        get_loader("torch-dataloader")
        .load()
        .build(pipeline, {"workers": workers, "batch_size": 8, "batch_timeout_s": 60})
    )
    try:
        batch = next(loader.batches())
    finally:
        loader.close()
    problem = check_batch(batch, expectation(pipeline.config, 8, labels))
    assert problem is None, problem
    return batch, pipeline


@pytest.mark.timeout(300)
@pytest.mark.parametrize("workers", [0, 2])
@pytest.mark.parametrize("name", list(CROP_PIPELINES))
def test_first_batch_through_the_dataloader(name: str, workers: int, photo_dir: Path) -> None:
    batch, pipeline = _first_batch(name, photo_dir, workers)
    images = batch[0]
    assert tuple(images.shape) == (8, 3, 224, 224) and str(images.dtype) == "torch.float32"
    if workers == 0:  # counted in this process: every photo a JPEG, at full scale (240 px)
        info = pipeline.decode_info()
        assert info["crop_decode_jpeg"] >= 8 and "crop_decode_fallback" not in info
        assert info.get("crop_decode_scale_1/1", 0) == info["crop_decode_jpeg"]


def test_reduced_pipeline_reduces_large_photos(tmp_path: Path, photos: dict[str, bytes]) -> None:
    for i, data in enumerate(photos.values()):
        (tmp_path / f"class_{i % 2}").mkdir(exist_ok=True)
        (tmp_path / f"class_{i % 2}" / f"{i}.jpg").write_bytes(data)
    _, pipeline = _first_batch("turbojpeg-roi-reduced", tmp_path, 0)
    info = pipeline.decode_info()
    assert (
        sum(v for k, v in info.items() if k.startswith("crop_decode_scale_1/"))
        == info["crop_decode_jpeg"]
    )
    assert any(info.get(f"crop_decode_scale_1/{s}") for s in (2, 4, 8)), info


# -- 4. bad files --------------------------------------------------------------------------------
@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", list(CROP_PIPELINES))
def test_bad_files_are_named_and_a_png_falls_back(
    name: str, tmp_path: Path, photo_dir: Path
) -> None:
    for bad in BAD_FILES:
        root = tmp_path / bad.replace(".", "-")
        paths = folder(root, photo_dir, bad)
        error = first_error("torch-dataloader", name, paths)
        if bad == "png_named.jpg":  # decoded whole by the fallback, then cropped
            assert error is None, error
            assert non_jpeg_files(paths) == 1
        elif bad == "truncated.jpg" and name == "nvimgcodec-roi":
            # a region decode stops at the window's last row: a window above the missing half
            # decodes (test_nvimgcodec_region_stops_at_the_window); one below it is named
            assert error is None or str(root / bad) in error, error
        else:
            assert error is not None and str(root / bad) in error, error


def test_png_falls_back_and_is_counted(photo_dir: Path) -> None:
    from PIL import Image

    path = sorted(photo_dir.rglob("*.jpg"))[0]
    with Image.open(path) as image:
        out = io.BytesIO()
        image.save(out, format="PNG")
        full = np.asarray(image.convert("RGB"))
    for name in CROP_PIPELINES:
        forced = Window(11, 7, 150, 120)
        decoder = build_crop_decoder(_config(name), draw=lambda w, h, f=forced: f)
        got = decoder(out.getvalue())
        assert np.array_equal(got, full[7:127, 11:161]), name
        assert decoder(full) is not None  # decoded pixels (a format that stores them): cut too
        assert decoder.info() == {"crop_decode_fallback": 2}, name


def test_nvimgcodec_region_stops_at_the_window(photos: dict[str, bytes]) -> None:
    data = photos["hubble-1000x872"]
    truncated = data[: len(data) // 2]
    config = _config("nvimgcodec-roi")
    top = build_crop_decoder(config, draw=lambda w, h: Window(0, 0, 300, 100))
    assert top(truncated).shape == (100, 300, 3)
    bottom = build_crop_decoder(config, draw=lambda w, h: Window(0, 700, 300, 100))
    with pytest.raises(ValueError, match="nvImageCodec returned no image"):
        bottom(truncated)
    turbo = build_crop_decoder(_config("turbojpeg-roi"), draw=lambda w, h: Window(0, 0, 300, 100))
    with pytest.raises(UserWarning, match="Premature end"):  # its crop reads the whole stream
        turbo(truncated)


class _Draws:
    """A dataset whose samples are windows drawn by one RecipeWindows built (and used) here."""

    def __init__(self) -> None:
        from imgbench.loaders.crop_decode import RecipeWindows

        self.windows = RecipeWindows()
        self.first = self.windows(320, 240)  # a draw before the fork

    def __len__(self) -> int:
        return 8

    def __getitem__(self, index: int) -> tuple[int, int, int, int]:
        return self.windows(320, 240).box


def test_forked_workers_draw_their_own_windows() -> None:
    """The main process's draw sequence is fixed (seed 0); each DataLoader worker reseeds from
    torch's worker seed on its first draw, so forked workers do not repeat each other's windows."""
    from torch.utils.data import DataLoader

    from imgbench.loaders.crop_decode import RecipeWindows

    dataset = _Draws()
    assert dataset.first == RecipeWindows()(320, 240)  # deterministic in the main process
    loader = DataLoader(dataset, batch_size=4, num_workers=2, collate_fn=list)  # type: ignore[arg-type]
    first, second = list(loader)  # one batch per worker, in order
    assert first != second
