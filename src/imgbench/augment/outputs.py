"""A case's outputs checked on its own images before timing, with verify.py's checks.

``imgbench verify augment`` judges every library on three shipped photos; a bench row is about
the dataset's images, so each case also checks the outputs it computed on them (untimed, in
``prepare``): shape, dtype and value range as the parameter table says (``verify._shape_check``),
and, for deterministic transforms and pipelines, the reference library's output on the same
images (at most ``REFERENCE_IMAGES``) within the table's tolerance (``verify._compare``).

A wrong shape, dtype or range fails the case, and so does a difference from the reference
beyond ``FAIL_FACTOR`` times the table's tolerance. The tolerances were set on three photos:
on textured images legitimate filters differ more (OpenCV's INTER_AREA resize against
torchvision's antialiased bilinear reaches 1.6-2x the tolerance on scikit-image's grass and
gravel), while a wrong implementation is far out (a 1 px crop shift, another sharpen: 13x and
more). Between 1x and ``FAIL_FACTOR`` x the row is measured and says ``flagged``, as the
agreement check does; a disagreement listed in ``spec.KNOWN_DISAGREEMENTS`` never fails (a
documented finding, still measured, and the row says so).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from imgbench.augment import spec, verify
from imgbench.augment.base import Op, make_input
from imgbench.augment.pipelines import OUTPUT_SHAPE, PIPELINE_BY_NAME
from imgbench.augment.registry import AugmentLibrary, libraries
from imgbench.augment.spec import Tolerance
from imgbench.errors import one_line

REFERENCE_IMAGES = 8  # images the reference library runs on per case, at most ...
REFERENCE_BUDGET_S = 1.0  # ... and no more once this long was spent (a slow median filter)
FAIL_FACTOR = 3.0  # a difference beyond this many times the table's tolerance fails the case


@dataclass
class OutputCheck:
    """What a case's outputs on its own images gave; ``problem`` fails the case."""

    verified: int = 0  # images whose outputs passed shape, dtype and range
    flag: str = "pass (shape/dtype/range)"
    problem: str | None = None
    reference: str | None = None
    compared: int = 0  # images compared with the reference
    mean_abs: float | None = None  # worst image's mean absolute difference, grey levels
    max_abs: float | None = None
    tolerance: Tolerance | None = None

    def extra(self) -> dict[str, Any]:
        """The row's ``extra_json`` keys."""
        out: dict[str, Any] = {"verified_outputs": self.verified, "output_check": self.flag}
        if self.reference is not None and self.compared:
            out |= {
                "output_reference": self.reference,
                "output_compared": self.compared,
                "output_mean_abs": self.mean_abs,
                "output_max_abs": self.max_abs,
                "output_tolerance": str(self.tolerance),
            }
        return out


def _tolerance(lib: AugmentLibrary, kind: str, name: str) -> Tolerance | None:
    """The tolerance this library's output is held to, or None when it draws something random."""
    if kind == "pipeline":
        return PIPELINE_BY_NAME[name].tolerance
    row = lib.row(name)
    return row.tolerance if row is not None else None


def reference_for(lib: AugmentLibrary, kind: str, name: str) -> AugmentLibrary | None:
    """The library the outputs are compared with: verify.py's order, first one installed that
    has the transform or pipeline without drawing anything random."""
    by_key = {candidate.key: candidate for candidate in libraries()}
    for key in verify.REFERENCE_ORDER:
        candidate = by_key.get(key)
        if candidate is None or not verify._available(candidate):
            continue
        if kind == "pipeline":
            if candidate.pipeline_names is None or name in candidate.pipeline_names:
                return candidate
        elif _tolerance(candidate, kind, name) is not None and name in candidate.transforms():
            return candidate
    return None


def check_outputs(
    lib: AugmentLibrary,
    kind: str,
    name: str,
    op: Op,
    outputs: Sequence[Any],
    sources: Sequence[Sequence[np.ndarray]],
    where: Callable[[int, int], str],
    *,
    batched: bool = False,
) -> OutputCheck:
    """Judge ``outputs[i]``, the op's output for the source images ``sources[i]`` (one image, or
    a batch's). ``where(i, j)`` names image j of output i for a message."""
    key = lib.key + ("@batch" if batched else "")
    known = spec.KNOWN_DISAGREEMENTS.get((name, lib.key))
    result = OutputCheck()

    def fail(problem: str) -> OutputCheck:
        if known is None:
            result.problem, result.flag = problem, f"flagged: {problem}"
        else:  # a documented finding: measured, and the row says what differs
            result.flag = f"known disagreement ({known}): {problem}"
        return result

    for i, (out, images) in enumerate(zip(outputs, sources, strict=True)):
        first: tuple[int, ...] = (
            OUTPUT_SHAPE if kind == "pipeline" else verify._expected_shape(name, images[0])
        )
        expected = (len(images), *first) if batched else first
        checked = verify._shape_check(name, key, op, [out], [verify.levels(out, op)], [expected])
        if checked.status != "pass":
            return fail(f"{where(i, 0)}: {checked.detail}")
        result.verified += len(images)

    tolerance = _tolerance(lib, kind, name)
    reference = reference_for(lib, kind, name) if tolerance is not None else None
    if tolerance is None or reference is None:
        return result
    if reference.key == lib.key and not batched:  # it is the reference: nothing to compare
        result.flag, result.reference = "pass (reference)", reference.key
        return result
    result.reference, result.tolerance = reference.key, tolerance
    return _compare(result, key, kind, name, op, outputs, sources, where, reference, fail)


def _compare(
    result: OutputCheck,
    key: str,
    kind: str,
    name: str,
    op: Op,
    outputs: Sequence[Any],
    sources: Sequence[Sequence[np.ndarray]],
    where: Callable[[int, int], str],
    reference: AugmentLibrary,
    fail: Callable[[str], OutputCheck],
) -> OutputCheck:
    """The reference library on the first images, image by image (one float copy at a time)."""
    assert result.tolerance is not None
    try:
        build = (reference.pipelines() if kind == "pipeline" else reference.transforms())[name]
        ref_op = build()
    except Exception as exc:
        result.flag = f"not compared: reference {reference.key} failed to build ({one_line(exc)})"
        return result
    tolerance = result.tolerance
    worst_mean = worst_max = 0.0
    flagged: str | None = None
    start = time.perf_counter()
    for i, (out, images) in enumerate(zip(outputs, sources, strict=True)):
        if result.compared >= REFERENCE_IMAGES or time.perf_counter() - start > REFERENCE_BUDGET_S:
            break
        ours_all = verify.levels(out, op)
        for j, image in enumerate(images[: REFERENCE_IMAGES - result.compared]):
            if result.compared and time.perf_counter() - start > REFERENCE_BUDGET_S:
                break
            ours = ours_all[j] if ours_all.ndim == 4 else ours_all
            try:
                theirs = verify.levels(ref_op.fn(make_input(image, ref_op.input)), ref_op)
            except Exception as exc:
                result.flag = f"not compared: reference {reference.key} failed ({one_line(exc)})"
                return result
            agreement = verify._compare(name, key, reference.key, [ours], [theirs], tolerance)
            result.compared += 1
            worst_mean = max(worst_mean, agreement.mean_abs or 0.0)
            worst_max = max(worst_max, agreement.max_abs or 0.0)
            result.mean_abs, result.max_abs = worst_mean, worst_max
            if agreement.status == "pass":
                continue
            if agreement.mean_abs is None or _far_out(agreement, tolerance):  # None: shapes
                return fail(f"{where(i, j)}: {agreement.detail} (over {FAIL_FACTOR:g}x)")
            flagged = flagged or f"{where(i, j)}: {agreement.detail}"
    if flagged is not None:
        known = spec.KNOWN_DISAGREEMENTS.get((name, key.split("@")[0]))
        result.flag = (
            f"known disagreement ({known}): {flagged}"
            if known is not None
            else f"flagged: {flagged} (within {FAIL_FACTOR:g}x the tolerance: measured)"
        )
        return result
    result.flag = f"pass (vs {reference.key})"
    return result


def _far_out(agreement: verify.Agreement, tolerance: Tolerance) -> bool:
    """Beyond ``FAIL_FACTOR`` times the tolerance: a wrong implementation, not another filter."""
    limit_max = tolerance.max_abs * FAIL_FACTOR if tolerance.max_abs is not None else None
    limit_mean = tolerance.mean_abs * FAIL_FACTOR if tolerance.mean_abs is not None else None
    return bool(
        (limit_max is not None and (agreement.max_abs or 0.0) > limit_max + 1e-6)
        or (limit_mean is not None and (agreement.mean_abs or 0.0) > limit_mean)
    )
