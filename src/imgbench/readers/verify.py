"""Verification: does a reader return the same pixels as a reference decode?

The reference is Pillow with the pixel policy (``imgbench.readers.libs.pillow.pil_to_rgb8``); for
reduced outputs, the full reference reduced with ``Image.reduce`` (a box filter, the closest
plain-pixel equivalent of libjpeg's DCT scaling). A reader passes an image when its output has
the reference's shape (reduced outputs: within one row/column, as libvips rounds down), uint8,
C-contiguous, RGB order, and a mean absolute error within ``tolerance``. Used twice: by
``imgbench verify readers`` and by every reader case before timing (failing images are left out
of the timing, and the row lists them).

The checks only: every read session imports this module, so it must not pull in the CLI stack
(typer, rich); the command and its tables live in ``imgbench.readers.verify_cli``.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from imgbench.atomic import atomic_file
from imgbench.errors import one_line
from imgbench.readers.base import ReaderSpec, contract_problem
from imgbench.readers.registry import build_reader

# Mean absolute error allowed against the reference, in 8-bit levels.
TOLERANCE_LOSSLESS = 1.0  # PNG, BMP, TIFF: exact but for 16-bit rounding (>>8 vs /257)
TOLERANCE_LOSSY = 2.0  # JPEG, WebP: IDCT variants and libjpeg-turbo versions differ by ~1
TOLERANCE_REDUCED = 4.0  # DCT scaling or a resize filter vs a box filter: measured <= 2.3
LOSSY_CODECS = frozenset({"jpeg", "webp"})


def tolerance(codec: str, output: str) -> float:
    """The mean absolute error allowed for ``codec`` decoded to ``output`` ("full" or reduced)."""
    if output != "full":
        return TOLERANCE_REDUCED
    return TOLERANCE_LOSSY if codec in LOSSY_CODECS else TOLERANCE_LOSSLESS


@dataclass(frozen=True)
class Verdict:
    """One reader's result on one image."""

    path: str
    ok: bool
    detail: str  # "pass" with the error, or what is wrong
    mae: float | None = None


def reference_decode(data: bytes, reduce: int | None = None) -> np.ndarray:
    """Pillow with the pixel policy; reduced by a box filter when ``reduce`` is given."""
    from PIL import Image

    from imgbench.readers.libs.pillow import pil_to_rgb8

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
    problem = contract_problem(out)
    if problem is not None or not isinstance(out, np.ndarray):
        return problem, float("nan")
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

    def __init__(self, max_bytes: int = 1 << 30, folder: Path | None = None) -> None:
        self.max_bytes = max_bytes
        self.folder = folder  # also kept here as .npy files: worker processes share them
        self._arrays: dict[tuple[str, int, int | None], np.ndarray | str] = {}
        self._bytes = 0

    def get(self, key: str, data: bytes, reduce: int | None) -> np.ndarray | str:
        """The reference array, or the one-line reason the reference decode failed."""
        slot = (key, len(data), reduce)
        hit = self._arrays.get(slot)
        if hit is not None:
            return hit
        stored = self.folder / f"{key}-{len(data)}-{reduce or 1}.npy" if self.folder else None
        value: np.ndarray | str
        if stored is not None and stored.is_file():
            value = np.load(stored)
        else:
            try:
                value = reference_decode(data, reduce)
            except Exception as exc:
                value = one_line(exc)
            if stored is not None and isinstance(value, np.ndarray):
                with atomic_file(stored) as handle:
                    np.save(handle, value)
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


# -- one reader on a whole dataset (``imgbench verify readers``) -----------------------------------


class VerifyError(ValueError):
    """The verification cannot run at all (e.g. the dataset cannot be loaded)."""


# (codec, path in the dataset, file bytes, content key) of one image to verify on
ImageItem = tuple[str, str, bytes, str]


@dataclass
class VerifyImages:
    """The images a verification runs on, at most ``max_images`` per codec."""

    dataset: str  # the dataset's name
    images: list[ImageItem]
    per_codec: dict[str, int]  # images per codec, in manifest order


def load_images(dataset: str, max_images: int) -> VerifyImages:
    """The first ``max_images`` images of each codec of ``dataset`` (a folder or a recipe)."""
    from imgbench.datasets import DatasetError, load_dataset

    try:
        ds = load_dataset(dataset)
    except DatasetError as exc:
        raise VerifyError(str(exc)) from None
    manifest = ds.manifest
    images: list[ImageItem] = []
    per_codec: dict[str, int] = {}
    for entry in manifest.entries:
        if per_codec.get(entry.codec, 0) >= max_images:
            continue
        per_codec[entry.codec] = per_codec.get(entry.codec, 0) + 1
        path = manifest.root / entry.path
        images.append((entry.codec, entry.path, path.read_bytes(), entry.sha256))
    return VerifyImages(ds.name, images, per_codec)


@dataclass
class ReaderReport:
    """One reader's verdicts on the images of its codecs, or why it did not run here."""

    spec: ReaderSpec
    status: str = "ran"  # ran | unavailable | elsewhere
    reason: str = ""
    verdicts: list[tuple[str, Verdict]] = field(default_factory=list)  # (codec, verdict)

    @property
    def failures(self) -> int:
        return sum(not v.ok for _, v in self.verdicts)


def selected(spec: ReaderSpec, only: Sequence[str]) -> bool:
    """Whether ``spec`` is among ``only`` (library or library/variant names; empty: all)."""
    return not only or spec.library in only or f"{spec.library}/{spec.variant}" in only


def verify_reader(
    spec: ReaderSpec, images: Sequence[ImageItem], reduce: int, environment: str
) -> ReaderReport:
    """Build the reader of ``spec`` and judge it on each image of its codecs."""
    report = ReaderReport(spec)
    if spec.environment != environment:
        report.status, report.reason = (
            "elsewhere",
            f"run .venvs/{spec.environment}/bin/imgbench verify readers "
            f"(after imgbench env create {spec.environment})",
        )
        return report
    try:
        reader = build_reader(spec, reduce=reduce if spec.output != "full" else None)
    except Exception as exc:
        report.status, report.reason = "unavailable", one_line(exc)
        return report
    if spec.library == "pillow-simd":
        from imgbench.envs import pillow_simd_facts, pillow_simd_problem

        problem = pillow_simd_problem(pillow_simd_facts())
        if problem:
            report.status, report.reason = "unavailable", problem
            return report
    for codec, path, data, key in images:
        if codec not in spec.codecs:
            continue
        verdict = verify_item(
            reader.decode,
            data,
            path=path,
            data=data,
            key=key,
            codec=codec,
            output=spec.output,
            reduce=reduce,
        )
        report.verdicts.append((codec, verdict))
    return report
