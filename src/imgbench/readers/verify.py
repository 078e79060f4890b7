"""Verification: does a reader return the same pixels as a reference decode?

The reference is Pillow with the pixel policy (``imgbench.readers.pillow.pil_to_rgb8``); for
reduced outputs, the full reference reduced with ``Image.reduce`` (a box filter, the closest
plain-pixel equivalent of libjpeg's DCT scaling). A reader passes an image when its output has
the reference's shape (reduced outputs: within one row/column, as libvips rounds down), uint8,
C-contiguous, RGB order, and a mean absolute error within ``tolerance``. Used twice: by
``imgbench verify readers`` and by every reader case before timing (failing images are left out
of the timing, and the row lists them).
"""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

import numpy as np
import typer

from imgbench.console import fail
from imgbench.errors import one_line

# Mean absolute error allowed against the reference, in 8-bit levels.
TOLERANCE_LOSSLESS = 1.0  # PNG, BMP, TIFF: exact but for 16-bit rounding (>>8 vs /257)
TOLERANCE_LOSSY = 2.0  # JPEG, WebP: IDCT variants and libjpeg-turbo versions differ by ~1
TOLERANCE_REDUCED = 4.0  # DCT scaling or a resize filter vs a box filter: measured <= 2.3
LOSSY_CODECS = frozenset({"jpeg", "webp"})


def tolerance(codec: str, output: str) -> float:
    if output != "full":
        return TOLERANCE_REDUCED
    return TOLERANCE_LOSSY if codec in LOSSY_CODECS else TOLERANCE_LOSSLESS


@dataclass(frozen=True)
class Verdict:
    path: str
    ok: bool
    detail: str  # "pass" with the error, or what is wrong
    mae: float | None = None


def reference_decode(data: bytes, reduce: int | None = None) -> np.ndarray:
    """Pillow with the pixel policy; reduced by a box filter when ``reduce`` is given."""
    from PIL import Image

    from imgbench.readers.pillow import pil_to_rgb8

    with Image.open(io.BytesIO(data)) as image:
        full = pil_to_rgb8(image)
    if not reduce or reduce == 1:
        return full
    return np.asarray(Image.fromarray(full).reduce(reduce))


def pixel_limit_problem(data: bytes, limit: int | None = None) -> str | None:
    """Why this file must not be decoded (its header claims too many pixels), or None.

    Several decoders trust the header: a 60000x60000 JPEG header made libjpeg-turbo readers
    allocate 10 GB and spend a minute, and torchvision crash. Checked before any reader runs
    on a file (never inside the timing); the limit is the dataset scan's (IMGBENCH_MAX_PIXELS).
    """
    import warnings

    from PIL import Image

    from imgbench.datasets.scan import max_pixels_default

    limit = max_pixels_default() if limit is None else limit
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", Image.DecompressionBombWarning)
        try:
            with Image.open(io.BytesIO(data)) as image:
                width, height = image.size
        except Image.DecompressionBombError as exc:
            return f"decompression bomb: {one_line(exc)}"
        except Exception:
            return None  # unreadable header: the reader will say what is wrong
    if width * height > limit:
        return (
            f"decompression bomb: header claims {width}x{height} = {width * height / 1e6:.0f} MP, "
            f"over the limit of {limit / 1e6:.0f} MP (IMGBENCH_MAX_PIXELS)"
        )
    return None


def compare(out: object, ref: np.ndarray, *, codec: str, output: str) -> tuple[str | None, float]:
    """(problem or None, mean absolute error) of one output against its reference."""
    if not isinstance(out, np.ndarray):
        return f"returned {type(out).__name__}, not a numpy array", float("nan")
    if out.dtype != np.uint8:
        return f"dtype {out.dtype}, expected uint8", float("nan")
    if out.ndim != 3 or out.shape[2] != 3:
        return f"shape {out.shape}, expected HxWx3", float("nan")
    if not out.flags.c_contiguous:
        return "array is not C-contiguous", float("nan")
    slack = 0 if output == "full" else 1
    dh, dw = abs(out.shape[0] - ref.shape[0]), abs(out.shape[1] - ref.shape[1])
    if dh > slack or dw > slack:
        return f"shape {out.shape[:2]}, reference {ref.shape[:2]}", float("nan")
    h, w = min(out.shape[0], ref.shape[0]), min(out.shape[1], ref.shape[1])
    a = out[:h, :w].astype(np.int16)
    b = ref[:h, :w].astype(np.int16)
    mae = float(np.abs(a - b).mean())
    limit = tolerance(codec, output)
    if mae <= limit:
        return None, mae
    swapped = float(np.abs(a[..., ::-1] - b).mean())
    if swapped <= limit:
        return f"channels in BGR order (mean abs error {mae:.2f}, {swapped:.2f} swapped)", mae
    return f"mean abs error {mae:.2f} > tolerance {limit:g}", mae


class ReferenceCache:
    """Reference arrays by (content hash, reduce), bounded in bytes: cases share them."""

    def __init__(self, max_bytes: int = 1 << 30) -> None:
        self.max_bytes = max_bytes
        self._arrays: dict[tuple[str, int, int | None], np.ndarray | str] = {}
        self._bytes = 0

    def get(self, key: str, data: bytes, reduce: int | None) -> np.ndarray | str:
        """The reference array, or the one-line reason the reference decode failed."""
        slot = (key, len(data), reduce)
        hit = self._arrays.get(slot)
        if hit is not None:
            return hit
        try:
            value: np.ndarray | str = reference_decode(data, reduce)
        except Exception as exc:
            value = one_line(exc)
        size = value.nbytes if isinstance(value, np.ndarray) else 0
        if self._bytes + size <= self.max_bytes:
            self._arrays[slot] = value
            self._bytes += size
        return value


REFERENCES = ReferenceCache()


def verify_item(
    fn: Callable[[Any], Any],
    item: Any,
    *,
    path: str,
    data: bytes,
    key: str,
    codec: str,
    output: str = "full",
    reduce: int | None = None,
    references: ReferenceCache = REFERENCES,
) -> Verdict:
    """Run ``fn(item)`` once and judge it; never raises for a bad file."""
    bomb = pixel_limit_problem(data)
    if bomb:
        return Verdict(path, False, bomb)
    try:
        out = fn(item)
    except Exception as exc:
        return Verdict(path, False, f"error: {one_line(exc)}")
    ref = references.get(key, data, reduce if output != "full" else None)
    if isinstance(ref, str):
        return Verdict(path, False, f"returned an array, but the reference decode failed ({ref})")
    problem, mae = compare(out, ref, codec=codec, output=output)
    if problem:
        return Verdict(path, False, problem, None if np.isnan(mae) else mae)
    return Verdict(path, True, "pass", mae)


# -- the command ------------------------------------------------------------------------------


def verify_command(
    dataset: Annotated[str, typer.Option(help="a folder of images, or a recipe name")],
    max_images: Annotated[
        int, typer.Option(help="images per codec, from the start of the manifest")
    ] = 64,
    reader: Annotated[
        list[str] | None, typer.Option(help="only this reader: library or library/variant")
    ] = None,
    reduce: Annotated[int, typer.Option(help="factor for the reduced-size variants")] = 4,
    show_all: Annotated[bool, typer.Option("--all", help="one line per image, passes too")] = False,
    strict: Annotated[bool, typer.Option(help="exit 1 when any image fails")] = False,
) -> None:
    """Run every available reader on every image and compare it with a reference decode."""
    from rich.console import Console

    from imgbench.readers.verify_report import VerifyError, run_verification

    console = Console()
    try:
        failures = run_verification(
            console,
            dataset=dataset,
            max_images=max_images,
            only=reader or [],
            reduce=reduce,
            show_all=show_all,
        )
    except VerifyError as exc:
        raise fail(exc) from None
    raise typer.Exit(1 if strict and failures else 0)
