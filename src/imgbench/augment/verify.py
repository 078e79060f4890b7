"""Do the libraries do the same work? Agreement of every transform and pipeline on real photos.

Deterministic transforms (fixed parameters) are compared with a reference library within the
tolerance stated in spec.py; random ones, and rows whose library draws something we cannot fix,
are checked for shape, dtype and value range. The photos are scikit-image's astronaut, coffee
and chelsea (shipped in the package, no network). Bench rows carry the result of their
transform or pipeline in ``extra_json.agreement``; ``imgbench verify augment`` prints the table.

The checks only: augmentation cases import this module, so it must not pull in the CLI stack
(typer, rich); the command and its table live in ``imgbench.augment.verify_cli``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np

from imgbench.augment import spec
from imgbench.augment.base import IMAGENET_MEAN, IMAGENET_STD, Op, as_hwc, make_batch, make_input
from imgbench.augment.pipelines import OUTPUT_SHAPE, PIPELINE_BY_NAME
from imgbench.augment.registry import AugmentLibrary, libraries
from imgbench.augment.spec import Tolerance
from imgbench.errors import one_line
from imgbench.measure.seeds import seed_everything

PHOTOS = ("astronaut", "coffee", "chelsea")
# The first of these that has the transform (and draws nothing random) is the reference.
REFERENCE_ORDER = (
    "torchvision/v2-tensor",
    "pillow/pil",
    "opencv/numpy",
    "albumentations/numpy",
    "kornia/tensor",
    "torchvision/v2-pil",
)
BATCH_SIDE = 300  # verification batches: photos centre-cropped to 300x300, stacked
_EPS = 1e-3


@dataclass(frozen=True)
class Agreement:
    """One library's result for one transform or pipeline."""

    name: str  # transform or pipeline
    key: str  # library/variant, with "@batch" for batch mode
    check: str  # "compare" | "reference" | "shape"
    status: str  # "pass" | "flagged" | "error" | "n/a"
    reference: str | None = None
    mean_abs: float | None = None  # worst photo's mean absolute difference, grey levels
    max_abs: float | None = None  # largest absolute difference over all photos
    tolerance: Tolerance | None = None
    detail: str = ""

    @property
    def flag(self) -> str:
        """The one string a bench row carries: starts with "pass" only when it passed."""
        if self.status == "pass":
            return {
                "compare": "pass",
                "reference": "pass (reference)",
                "shape": "pass (shape/dtype/range)",
            }[self.check]
        return f"{self.status}: {self.detail}"


@functools.cache
def photos() -> tuple[tuple[str, np.ndarray], ...]:
    """The verification photos as HxWx3 uint8 RGB (empty when scikit-image is missing)."""
    try:
        import skimage.data
    except ImportError:
        return ()
    return tuple((name, np.ascontiguousarray(getattr(skimage.data, name)())) for name in PHOTOS)


def _available(lib: AugmentLibrary) -> bool:
    """Runs here: its env (an isolated env's entry only there; a main entry not where its module
    is replaced, e.g. albumentations in the AlbumentationsX env), its imports and its check."""
    return lib.unmet_requirement() is None


def _seed() -> None:
    seed_everything(0)


_NORM_MEAN = np.asarray(IMAGENET_MEAN)
_NORM_STD = np.asarray(IMAGENET_STD)


def levels(output: Any, op: Op) -> np.ndarray:
    """Any op output as HxWxC (or BxHxWxC) float64 grey levels; normalised outputs de-normalised."""
    array = as_hwc(output, op)
    if op.output == "norm":
        array = (array * _NORM_STD + _NORM_MEAN) * 255.0
    return array


def _dtype_ok(output: Any, op: Op) -> str | None:
    name = str(getattr(output, "dtype", type(output).__name__)).removeprefix("torch.")
    expected = "uint8" if op.output == "u8" else "float32"
    if name != expected:
        return f"dtype {name}, expected {expected}"
    return None


def _range_ok(array: np.ndarray) -> str | None:
    low, high = float(array.min()), float(array.max())
    if low < -_EPS or high > 255 + _EPS:
        return f"values {low:.2f}..{high:.2f} outside 0..255 (in grey levels)"
    return None


def _run(op: Op, image: np.ndarray) -> tuple[Any, np.ndarray]:
    output = op.fn(make_input(image, op.input))
    return output, levels(output, op)


def _outputs(build: Any, images: list[np.ndarray]) -> tuple[Op, list[Any], list[np.ndarray]]:
    _seed()
    op = build()
    raw, arrays = [], []
    for image in images:
        out, array = _run(op, image)
        raw.append(out)
        arrays.append(array)
    return op, raw, arrays


def _compare(
    name: str, key: str, ref_key: str, ours: list[np.ndarray], ref: list[np.ndarray], tol: Tolerance
) -> Agreement:
    worst_mean, worst_max = 0.0, 0.0
    for a, b in zip(ours, ref, strict=True):
        if a.shape != b.shape:
            return Agreement(
                name,
                key,
                "compare",
                "flagged",
                ref_key,
                tolerance=tol,
                detail=f"shape {a.shape} vs {b.shape} from {ref_key}",
            )
        diff = np.abs(a - b)
        worst_mean = max(worst_mean, float(diff.mean()))
        worst_max = max(worst_max, float(diff.max()))
    problems = []
    if tol.max_abs is not None and worst_max > tol.max_abs + 1e-6:
        problems.append(f"max abs diff {worst_max:.3g} > tol {tol.max_abs:g}")
    if tol.mean_abs is not None and worst_mean > tol.mean_abs:
        problems.append(f"mean abs diff {worst_mean:.3g} > tol {tol.mean_abs:g}")
    status = "flagged" if problems else "pass"
    detail = "; ".join(problems) + f" vs {ref_key}" if problems else ""
    return Agreement(name, key, "compare", status, ref_key, worst_mean, worst_max, tol, detail)


def _shape_check(
    name: str, key: str, op: Op, raw: list[Any], arrays: list[np.ndarray], shapes: list[tuple]
) -> Agreement:
    for out, array, shape in zip(raw, arrays, shapes, strict=True):
        problem = _dtype_ok(out, op) or _range_ok(array)
        if problem is None and array.shape != shape:
            problem = f"shape {array.shape}, expected {shape}"
        if problem:
            return Agreement(name, key, "shape", "flagged", detail=problem)
    return Agreement(name, key, "shape", "pass")


def _expected_shape(name: str, image: np.ndarray) -> tuple[int, ...]:
    """The output shape every library must produce for a transform, as HxWx3."""
    h, w = image.shape[:2]
    if name in ("resize", "random_resized_crop", "center_crop", "random_crop"):
        return (spec.SIZE, spec.SIZE, 3)
    if name == "rotate90":
        return (w, h, 3)
    if name == "pad":
        return (h + 2 * spec.PAD, w + 2 * spec.PAD, 3)
    return (h, w, 3)


@functools.cache
def check_transform(name: str) -> tuple[Agreement, ...]:
    """Every available library's agreement on transform ``name``."""
    definition = spec.TRANSFORM_BY_NAME[name]
    images = [image for _, image in photos()]
    if not images:
        return tuple(
            Agreement(name, lib.key, "shape", "n/a", detail="scikit-image is not installed")
            for lib in libraries()
        )
    results: dict[str, tuple[Op, list[Any], list[np.ndarray]]] = {}
    errors: dict[str, str] = {}
    for lib in libraries():
        if not _available(lib):
            continue
        build = lib.transforms().get(name)
        if build is None:
            continue
        try:
            results[lib.key] = _outputs(build, images)
        except Exception as exc:  # a library that cannot run the transform is a finding
            errors[lib.key] = one_line(exc, limit=200)

    by_key = {lib.key: lib for lib in libraries()}

    def fixed(key: str) -> bool:
        row = by_key[key].row(name)
        return definition.deterministic and row is not None and row.deterministic

    reference = next((k for k in REFERENCE_ORDER if k in results and fixed(k)), None)
    expected = [_expected_shape(name, image) for image in images]
    agreements = [Agreement(name, key, "shape", "error", detail=err) for key, err in errors.items()]
    for key, (op, raw, arrays) in results.items():
        shape_result = _shape_check(name, key, op, raw, arrays, expected)
        if shape_result.status != "pass" or not fixed(key) or reference is None:
            agreements.append(shape_result)
        elif key == reference:
            agreements.append(
                Agreement(name, key, "reference", "pass", key, 0.0, 0.0, definition.tolerance)
            )
        else:
            assert definition.tolerance is not None
            agreements.append(
                _compare(name, key, reference, arrays, results[reference][2], definition.tolerance)
            )
    order = [lib.key for lib in libraries()]
    return tuple(sorted(agreements, key=lambda a: order.index(a.key)))


def _batch_images(images: list[np.ndarray]) -> list[np.ndarray]:
    out = []
    for image in images:
        h, w = image.shape[:2]
        top, left = (h - BATCH_SIDE) // 2, (w - BATCH_SIDE) // 2
        out.append(np.ascontiguousarray(image[top : top + BATCH_SIDE, left : left + BATCH_SIDE]))
    return out


@functools.cache
def check_pipeline(name: str) -> tuple[Agreement, ...]:
    """Every available library's agreement on pipeline ``name``, per image and in batch mode."""
    definition = PIPELINE_BY_NAME[name]
    images = [image for _, image in photos()]
    if not images:
        return tuple(
            Agreement(name, lib.key, "shape", "n/a", detail="scikit-image is not installed")
            for lib in libraries()
        )
    agreements: list[Agreement] = []
    results: dict[str, list[np.ndarray]] = {}
    for lib in libraries():
        if not _available(lib):
            continue
        try:
            op, raw, arrays = _outputs(lib.pipelines()[name], images)
        except Exception as exc:
            agreements.append(
                Agreement(name, lib.key, "shape", "error", detail=f"{type(exc).__name__}: {exc}")
            )
            continue
        checked = _shape_check(name, lib.key, op, raw, arrays, [OUTPUT_SHAPE] * len(images))
        if checked.status == "pass" and definition.tolerance is not None:
            results[lib.key] = arrays
        else:
            agreements.append(checked)
        if lib.batch_input is not None:
            agreements.append(_check_batch(name, lib, images))
    reference = next((k for k in REFERENCE_ORDER if k in results), None)
    for key, arrays in results.items():
        if key == reference:
            agreements.append(
                Agreement(name, key, "reference", "pass", key, 0.0, 0.0, definition.tolerance)
            )
        else:
            assert definition.tolerance is not None and reference is not None
            agreements.append(
                _compare(name, key, reference, arrays, results[reference], definition.tolerance)
            )
    order = [lib.key for lib in libraries()]
    return tuple(sorted(agreements, key=lambda a: (order.index(a.key.split("@")[0]), a.key)))


def _check_batch(name: str, lib: AugmentLibrary, images: list[np.ndarray]) -> Agreement:
    key = f"{lib.key}@batch"
    try:
        _seed()
        op = lib.pipelines(batched=True)[name]()
        out = op.fn(make_batch(_batch_images(images), op.input))
        array = levels(out, op)
    except Exception as exc:
        return Agreement(name, key, "shape", "error", detail=f"{type(exc).__name__}: {exc}")
    expected = (len(images), *OUTPUT_SHAPE)
    problem = _dtype_ok(out, op) or _range_ok(array)
    if problem is None and array.shape != expected:
        problem = f"shape {array.shape}, expected {expected}"
    if problem:
        return Agreement(name, key, "shape", "flagged", detail=problem)
    return Agreement(name, key, "shape", "pass")


def agreement_for(kind: str, name: str, key: str) -> Agreement | None:
    """The agreement of one library (``key``, "@batch" for batch mode) on a transform or pipeline."""
    results = check_transform(name) if kind == "transform" else check_pipeline(name)
    return next((a for a in results if a.key == key), None)


def all_agreements(transforms: list[str] | None = None, pipelines: bool = True) -> list[Agreement]:
    """The rows of ``imgbench verify augment``: the pipelines too when no transform is chosen."""
    names = transforms or [t.name for t in spec.TRANSFORMS]
    out = [a for name in names for a in check_transform(name)]
    if pipelines and transforms is None:
        out += [a for name in PIPELINE_BY_NAME for a in check_pipeline(name)]
    return out
