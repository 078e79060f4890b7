"""Crop-aware decode: the recipe's crop window drawn from the header, then only what it needs.

The train recipe (``train-classification``, ``train-uint8``) keeps 8-100% of the image's area
(``spec.RRC_SCALE``), yet a full pipeline decodes the whole image first. Here, per sample:

1. the image's size from its header (nothing decoded: TurboJPEG ``decode_header``, Pillow
   ``Image.open(...).size``, nvImageCodec's ``CodeStream``, a JPEG marker walk for OpenCV);
2. the window drawn as torchvision's ``RandomResizedCrop.get_params`` draws it
   (:func:`draw_window`: area uniform in ``RRC_SCALE``, aspect log-uniform in ``RRC_RATIO``, the
   first of 10 draws that fits at a uniform position, else the whole image narrowed to the ratio
   range, centred); the draw is injectable (``draw``), so tests can force a window;
3. only that window decoded (``roi``: PyTurboJPEG's lossless crop to the MCU-aligned region
   holding it, then a decode of that smaller JPEG; nvImageCodec's region decode), or the whole
   image at libjpeg's DCT scaling 1/2, 1/4 or 1/8 where the window keeps at least the output
   side (224) after it (``reduced``: TurboJPEG ``scaling_factor``, Pillow ``Image.draft``,
   OpenCV ``IMREAD_REDUCED_COLOR_N``), or both (``roi-reduced``, PyTurboJPEG); the window is
   then cut from what was decoded (a view, no copy): exactly, or at 1/s with its edges moved to
   the nearest multiples of s (:func:`snap`: under half an output pixel);
4. the rest of the recipe in the pipeline's augmentation library (:func:`rest_of_recipe`): the
   full pipeline's Compose without its RandomResizedCrop, with a Resize to 224x224 with the
   crop's interpolation (albumentations: INTER_AREA when shrinking, as its RRC), then flip,
   jitter, normalise.

The reduction never makes the final resize an upscale: 1/s is used only when the window's short
side is at least s x 225, so the window cut at 1/s (at least window / s - 1 pixels) still has
224 or more. A payload that is not a JPEG (by its first bytes: a PNG in the pool, a PNG named
.jpg) is decoded whole by the pipeline's reader (by Pillow for a JPEG-only reader) and cropped,
never failed, and counted (``crop_decode_fallback`` in ``SamplePipeline.decode_info()``, per
process; :func:`non_jpeg_files` counts a pool's up front). A broken JPEG (truncated, empty) is an
error, which the pipeline names with its file.

Stage times: the window's draw, decode and cut are the ``decode`` stage, the resize and the rest
``augment``; in a full pipeline the crop is in ``augment``. Compare the two stages' sum.
"""

from __future__ import annotations

import io
import math
import multiprocessing
import os
import random
import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal, NamedTuple, Protocol, get_args

import numpy as np

from imgbench.augment import spec

# how the recipe's random crop meets the decoder (PipelineConfig.crop_decode)
CropDecode = Literal["full", "roi", "reduced", "roi-reduced"]
FULL_DECODE: Final = "full"
CROP_DECODES: Final = get_args(CropDecode)

if TYPE_CHECKING:
    from imgbench.readers.base import Reader


class PipelineConfig(Protocol):
    """What this module reads of ``imgbench.loaders.pipeline.PipelineConfig`` (named, not
    imported: that module imports this one)."""

    @property
    def decoder(self) -> str: ...
    @property
    def augment(self) -> str: ...
    @property
    def recipe(self) -> str: ...
    @property
    def crop_decode(self) -> str: ...
    @property
    def label(self) -> str: ...


ROI: Final = "roi"
REDUCED: Final = "reduced"
ROI_REDUCED: Final = "roi-reduced"
FACTORS: Final = (8, 4, 2)  # libjpeg's DCT scalings, largest first
CROP_RECIPES: Final = ("train-classification", "train-uint8")  # recipes opening with the crop
SEED: Final = 0  # the window draw's seed (with the worker's), as albumentations' pipelines
JPEG_MAGIC: Final = b"\xff\xd8\xff"

# what each decoder library offers, and why the rest is not offered
OFFERS: Final[dict[str, frozenset[str]]] = {
    "pyturbojpeg": frozenset({ROI, REDUCED, ROI_REDUCED}),
    "pillow": frozenset({REDUCED}),
    "opencv": frozenset({REDUCED}),
    "nvimgcodec": frozenset({ROI}),
}
WHY_NOT: Final[dict[str, str]] = {
    "pillow": "Pillow decodes a JPEG whole: Image.draft scales the decode, nothing crops it",
    "opencv": "cv2.imdecode takes no region: IMREAD_REDUCED_COLOR_2/4/8 scale, nothing crops",
    "nvimgcodec": "nvImageCodec 0.9's DecodeParams has no scale: a region, at full size only",
}


@dataclass(frozen=True)
class Window:
    """A crop window in the image's pixels."""

    left: int
    top: int
    width: int
    height: int

    @property
    def box(self) -> tuple[int, int, int, int]:
        return self.left, self.top, self.width, self.height


WindowDraw = Callable[[int, int], Window]  # (image width, height) -> window


def draw_window(
    width: int,
    height: int,
    rng: random.Random,
    scale: tuple[float, float] = spec.RRC_SCALE,
    ratio: tuple[float, float] = spec.RRC_RATIO,
) -> Window:
    """torchvision's ``RandomResizedCrop.get_params``, step for step, on ``rng``."""
    area = width * height
    log_ratio = (math.log(ratio[0]), math.log(ratio[1]))
    for _ in range(10):
        target_area = area * rng.uniform(scale[0], scale[1])
        aspect = math.exp(rng.uniform(log_ratio[0], log_ratio[1]))
        w = round(math.sqrt(target_area * aspect))
        h = round(math.sqrt(target_area / aspect))
        if 0 < w <= width and 0 < h <= height:
            top = rng.randint(0, height - h)
            left = rng.randint(0, width - w)
            return Window(left, top, w, h)
    in_ratio = width / height  # no draw fitted: the whole image, narrowed to the ratio range
    if in_ratio < min(ratio):
        w, h = width, round(width / min(ratio))
    elif in_ratio > max(ratio):
        w, h = round(height * max(ratio)), height
    else:
        w, h = width, height
    return Window((width - w) // 2, (height - h) // 2, w, h)


def _process_key() -> str:
    """What tells this process's draws from another's: a DataLoader worker's seed (torch's,
    new each epoch), "main" in the main process, else the process id."""
    torch_data = sys.modules.get("torch.utils.data")
    if torch_data is not None:
        info = torch_data.get_worker_info()
        if info is not None:
            return f"worker-{info.seed}"
    return "main" if multiprocessing.parent_process() is None else f"pid-{os.getpid()}"


class RecipeWindows:
    """The recipe's window draw (:func:`draw_window`) on a ``random.Random`` per process,
    seeded from ``seed`` and the process (:func:`_process_key`) on its first draw there, so
    forked workers do not repeat each other's windows. Threads share it (one C call a draw)."""

    def __init__(self, seed: int = SEED) -> None:
        self.seed = seed
        self._rng: random.Random | None = None
        self._pid = -1

    def __call__(self, width: int, height: int) -> Window:
        if self._rng is None or self._pid != os.getpid():
            self._rng = random.Random(f"{self.seed}:{_process_key()}")
            self._pid = os.getpid()
        return draw_window(width, height, self._rng)


def reduce_factor(window: Window, size: int = spec.SIZE) -> int:
    """The largest DCT scaling 1/s that leaves the window at least ``size`` on each side once
    cut (the cut at 1/s has at least window / s - 1 pixels: so short side >= s x (size + 1)),
    else 1."""
    short = min(window.width, window.height)
    return next((s for s in FACTORS if short >= s * (size + 1)), 1)


def snap(window: Window, reduce: int, width: int, height: int) -> Window:
    """``window`` with its edges on the nearest multiples of ``reduce`` (the grid of a 1/reduce
    decode; the right and bottom edges of the image stay where they are): each edge moves by at
    most reduce / 2 pixels, under half an output pixel once resized (the window is at least
    reduce x 225 pixels on each side). The cut is then whole scaled pixels, exactly."""
    x0, y0 = round(window.left / reduce) * reduce, round(window.top / reduce) * reduce
    x1 = min(round((window.left + window.width) / reduce) * reduce, width)
    y1 = min(round((window.top + window.height) / reduce) * reduce, height)
    return Window(x0, y0, x1 - x0, y1 - y0)


def cut(pixels: np.ndarray, window: Window, left: int, top: int, reduce: int) -> np.ndarray:
    """The window's pixels out of ``pixels``: a decode at 1/``reduce`` (ceil of each side, as
    libjpeg scales) of the region whose top-left corner is (``left``, ``top``) in the image,
    the window's edges on that grid (:func:`snap`; the region's corner is MCU-aligned). A
    view."""
    x0, y0 = (window.left - left) // reduce, (window.top - top) // reduce
    x1 = -(-(window.left + window.width - left) // reduce)  # ceil: a partial last pixel
    y1 = -(-(window.top + window.height - top) // reduce)
    out = pixels[y0:y1, x0:x1]
    exact = (-(-window.height // reduce), -(-window.width // reduce))
    if out.shape[:2] != exact:
        raise ValueError(
            f"the decode gave {pixels.shape[1]}x{pixels.shape[0]} pixels at 1/{reduce}, without "
            f"the window {window.width}x{window.height} at ({window.left}, {window.top})"
        )
    return out


def jpeg_size(data: bytes) -> tuple[int, int]:
    """(width, height) from a JPEG's frame header (its SOF marker), walking the markers before
    it; nothing decoded."""
    i, end = 2, len(data)
    while i + 4 <= end:
        if data[i] != 0xFF:
            raise ValueError(f"not a JPEG marker at byte {i}")
        marker = data[i + 1]
        if marker == 0xFF:  # fill byte
            i += 1
            continue
        if marker in (0xD9, 0xDA):  # end of image, start of scan: no frame header before it
            break
        length = int.from_bytes(data[i + 2 : i + 4], "big")
        if marker in _SOF and i + 9 <= end:
            height = int.from_bytes(data[i + 5 : i + 7], "big")
            width = int.from_bytes(data[i + 7 : i + 9], "big")
            if width and height:
                return width, height
            break
        i += 2 + length
    raise ValueError("no JPEG frame header (SOF) with a size")


_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}  # DHT, JPG and DAC are not frames


class Decoded(NamedTuple):
    """What a window decoder decoded: ``pixels`` at 1/``reduce`` of the region whose top-left
    corner is (``left``, ``top``), which holds ``window``."""

    pixels: np.ndarray
    window: Window
    left: int
    top: int
    reduce: int


Plan = Callable[[int, int], tuple[Window, int]]  # (width, height) -> window, reduce factor


class WindowDecoder(Protocol):
    """One library's crop-aware JPEG decode: read the size, ask ``plan``, decode."""

    def decode(self, data: bytes, plan: Plan) -> Decoded: ...


class TurboWindows:
    """PyTurboJPEG: the header by ``decode_header``; ``region``: the lossless crop of the
    MCU-aligned region, then its decode (at ``scaling_factor`` 1/s where reduced), else the
    whole image's decode at 1/s."""

    def __init__(self, reader: Any, region: bool) -> None:
        self.reader, self.region = reader, region

    def decode(self, data: bytes, plan: Plan) -> Decoded:
        header = self.reader.header(data)
        window, reduce = plan(header[0], header[1])
        left = top = 0
        if self.region:
            data, left, top = self.reader.crop_region(data, window.box, header)
        return Decoded(self.reader.decode_scaled(data, reduce), window, left, top, reduce)


class PillowWindows:
    """Pillow: ``Image.open`` (the header), then ``Image.draft`` to 1/s where reduced; the
    reader's pixel policy (``pil_to_rgb8``)."""

    def decode(self, data: bytes, plan: Plan) -> Decoded:
        from PIL import Image

        from imgbench.readers.libs.pillow import pil_to_rgb8

        with Image.open(io.BytesIO(data)) as image:
            width, height = image.size
            window, reduce = plan(width, height)
            if reduce > 1:
                # asking width // s selects exactly 1/s (imgbench.readers.libs.pillow.PillowDraft);
                # the scale it took is width / the box it returns
                drafted = image.draft("RGB", (width // reduce, height // reduce))
                reduce = round(width / drafted[1][2]) if drafted else 1
            return Decoded(pil_to_rgb8(image), window, 0, 0, reduce)


class OpenCVWindows:
    """OpenCV: the size from the JPEG's markers (:func:`jpeg_size`), then ``imdecode`` with
    ``IMREAD_REDUCED_COLOR_<s>`` (the reader's RGB flags) where reduced, else the reader."""

    def __init__(self, reader: Any) -> None:
        from imgbench.readers.libs.opencv import ImdecodeReduced

        self.readers: dict[int, Any] = {1: reader, **{s: ImdecodeReduced(s) for s in FACTORS}}

    def decode(self, data: bytes, plan: Plan) -> Decoded:
        window, reduce = plan(*jpeg_size(data))
        return Decoded(self.readers[reduce].decode(data), window, 0, 0, reduce)


class NvimgcodecWindows:
    """nvImageCodec (CPU backend): the header from its ``CodeStream``, the window decoded as a
    region of it (``get_sub_code_stream(region=Region(...))``)."""

    def __init__(self, reader: Any) -> None:
        self.reader = reader

    def decode(self, data: bytes, plan: Plan) -> Decoded:
        stream = self.reader.code_stream(data)
        window, _ = plan(stream.width, stream.height)  # no scale: a region at full size
        pixels = self.reader.decode_region(stream, data, window.box)
        return Decoded(pixels, window, window.left, window.top, 1)


class CropDecoder:
    """``decoder(payload) -> the window's HxWx3 uint8 pixels`` (at 1/s where reduced): a JPEG
    through its library's :class:`WindowDecoder`, anything else (a PNG, decoded pixels) whole
    through ``fallback`` and cut. ``last_window`` is the window of the latest call in this
    process (tests); ``info()`` counts what it did here."""

    def __init__(
        self,
        windows: WindowDecoder,
        mode: str,
        fallback: Reader,
        draw: WindowDraw | None = None,
    ) -> None:
        self.windows, self.mode, self.fallback = windows, mode, fallback
        self.draw: WindowDraw = draw or RecipeWindows()
        self.last_window: Window | None = None
        self._counts: Counter[str] = Counter()
        self._lock = threading.Lock()

    def _plan(self, width: int, height: int) -> tuple[Window, int]:
        window = self.draw(width, height)
        reduce = reduce_factor(window) if self.mode in (REDUCED, ROI_REDUCED) else 1
        if reduce > 1:
            window = snap(window, reduce, width, height)
        self.last_window = window
        return window, reduce

    def __call__(self, payload: Any) -> np.ndarray:
        if isinstance(payload, np.ndarray):
            if payload.ndim == 3:  # a format storing decoded pixels: cut them
                return self._fallback(payload)
            payload = payload.tobytes()
        if bytes(payload[:3]) != JPEG_MAGIC:
            return self._fallback(payload)
        decoded = self.windows.decode(payload, self._plan)
        out = cut(decoded.pixels, decoded.window, decoded.left, decoded.top, decoded.reduce)
        self._count("crop_decode_jpeg", f"crop_decode_scale_1/{decoded.reduce}")
        return out

    def _fallback(self, payload: Any) -> np.ndarray:
        """Not a JPEG: decode it whole (or take its decoded pixels), draw, cut."""
        pixels = payload if isinstance(payload, np.ndarray) else self.fallback.decode(payload)
        window, _ = self._plan(pixels.shape[1], pixels.shape[0])
        out = cut(pixels, window, 0, 0, 1)
        self._count("crop_decode_fallback")
        return out

    def _count(self, *keys: str) -> None:
        with self._lock:
            self._counts.update(keys)

    def info(self) -> dict[str, int]:
        """``crop_decode_jpeg``: JPEGs decoded crop-aware; ``crop_decode_fallback``: payloads
        decoded whole then cut; ``crop_decode_scale_1/<s>``: JPEG decodes at each scale."""
        with self._lock:
            return dict(self._counts)


def _check(config: PipelineConfig) -> tuple[str, Any]:
    """The decoder's library and registry entry, if it offers ``config.crop_decode``."""
    from imgbench.readers.registry import find_spec

    library, variant = config.decoder.split("/", 1)
    offers = OFFERS.get(library, frozenset())
    if config.crop_decode not in offers:
        why = WHY_NOT.get(library, "no crop-aware decode is wired for it")
        raise ValueError(f"{config.decoder} offers no {config.crop_decode} decode: {why}")
    spec_ = find_spec(library, variant)
    if spec_.output != "full":
        raise ValueError(
            f"crop-aware decode starts from a full decode: {config.decoder} outputs {spec_.output}"
        )
    return library, spec_


def build_crop_decoder(config: PipelineConfig, draw: WindowDraw | None = None) -> CropDecoder:
    """The crop-aware decoder of ``config`` (``draw``: the window draw, the recipe's unless
    given)."""
    from imgbench.readers.base import JPEG_ONLY
    from imgbench.readers.registry import build_reader

    if config.crop_decode == FULL_DECODE:
        raise ValueError(f"{config.label}: a full decode is the pipeline's own (build_stages)")
    library, spec_ = _check(config)
    reader = build_reader(spec_)
    windows: WindowDecoder
    if library == "pyturbojpeg":
        windows = TurboWindows(reader, region=config.crop_decode in (ROI, ROI_REDUCED))
    elif library == "pillow":
        windows = PillowWindows()
    elif library == "opencv":
        windows = OpenCVWindows(reader)
    else:
        windows = NvimgcodecWindows(reader)
    fallback = reader
    if spec_.codecs == JPEG_ONLY:  # a JPEG-only decoder: Pillow decodes the odd PNG
        from imgbench.readers.libs.pillow import PillowReader

        fallback = PillowReader()
    return CropDecoder(windows, config.crop_decode, fallback, draw)


def _albumentations_steps(recipe: str) -> tuple[Any, list[Any]]:
    """(the module, the recipe's steps) with the RandomResizedCrop replaced by a Resize to
    224x224 with its interpolation (``AREA``: INTER_AREA when shrinking, INTER_LINEAR else)."""
    import albumentations as A  # noqa: N812 (the library's own convention)

    from imgbench.augment.libs import albumentations as module

    train = module._train()
    if not isinstance(train[0], A.RandomResizedCrop):  # the recipe changed: say so, loudly
        raise RuntimeError(f"the albumentations recipe no longer opens with its crop: {train[0]}")
    resize = A.Resize(spec.SIZE, spec.SIZE, **module.AREA)
    steps = [resize, *train[1:]] if recipe == "train-classification" else [resize, *train[1:-1]]
    return module, steps


def rest_of_recipe(config: PipelineConfig) -> Callable[[np.ndarray], Any]:
    """The recipe after the crop, in ``config.augment``'s library: the full pipeline's Compose
    (same seed, same steps) with a Resize in place of its RandomResizedCrop."""
    from imgbench.augment.registry import get_library

    library = get_library(config.augment)
    if library.module != "imgbench.augment.libs.albumentations":
        raise ValueError(
            f"crop-aware decode: the rest of the recipe is built for albumentations, "
            f"not {config.augment}"
        )
    if config.recipe not in CROP_RECIPES:
        raise ValueError(f"crop-aware decode: recipe {config.recipe} opens with no random crop")
    module, steps = _albumentations_steps(config.recipe)
    compose = (
        module._compose_chw
        if config.recipe == "train-classification"
        else (module._compose_chw_uint8)
    )
    fn: Callable[[np.ndarray], Any] = compose(steps).fn
    return fn


def window_resize() -> Callable[[np.ndarray], np.ndarray]:
    """The rest of the recipe's first step alone: the window to 224x224 uint8 (tests compare
    it with decode-then-crop-then-resize)."""
    import albumentations as A  # noqa: N812

    from imgbench.augment.libs import albumentations as module

    resize = A.Resize(spec.SIZE, spec.SIZE, **module.AREA)

    def run(window: np.ndarray) -> np.ndarray:
        return np.asarray(resize(image=window)["image"])

    return run


def crop_stages(
    config: PipelineConfig, draw: WindowDraw | None = None
) -> tuple[CropDecoder, Callable[[np.ndarray], Any], Callable[[], dict[str, int]]]:
    """(decode, augment, counts) of a crop-aware ``config``: the crop decoder, then the rest
    of the recipe on the window's HxWx3 array (``imgbench.loaders.pipeline.build_stages`` joins
    them into its ``Stages``)."""
    decoder = build_crop_decoder(config, draw)
    return decoder, rest_of_recipe(config), decoder.info


def non_jpeg_files(paths: Iterable[str | bytes]) -> int:
    """How many of ``paths`` are not JPEG by their first bytes (each falls back to a full
    decode every time it is drawn): for a row's record, read once, untimed."""
    count = 0
    for path in paths:
        with open(path, "rb") as handle:
            count += handle.read(3) != JPEG_MAGIC
    return count
