"""Every augmentation library imgbench measures. A new one: an adapter in ``libs/`` + an entry.

An adapter module exposes ``transforms(input_kind)`` and ``pipelines(input_kind)``: dicts from
transform or pipeline name to a builder of an ``Op`` (base.py). Libraries are imported only
when a case runs or a check needs them.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass

from imgbench.augment import spec
from imgbench.augment.base import InputKind, Op
from imgbench.augment.spec import Row
from imgbench.augment.tasks import TaskOp
from imgbench.library import LibrarySpec, catalog, find


@dataclass(frozen=True, kw_only=True)
class AugmentLibrary(LibrarySpec):
    """An augmentation registry entry: its adapter module and the input form it is fed."""

    module: str  # adapter module
    input: InputKind  # what per-image transforms take
    pipeline_input: InputKind  # what per-image pipelines take
    batch_input: InputKind | None = None  # batch mode: pipelines on BxCxHxW tensors
    parallel: bool = False  # parallelises internally: gets a default-threads variant
    # parameter-table rows of a library registered from another package (built-in libraries
    # have theirs in augment/spec.py's ROWS): which transforms it implements, and how
    rows: tuple[Row, ...] = ()
    pipeline_names: tuple[str, ...] | None = None  # the pipelines it builds; None: every one
    # the library whose parameter-table rows (spec.py) it implements, when it is another build of
    # that library's module in an isolated env (pillow-simd: Pillow's; AlbumentationsX: albumentations')
    rows_of: str | None = None

    def row(self, transform: str) -> Row | None:
        """How this library implements ``transform``, or None when it does not."""
        own = next((r for r in self.rows if r.transform == transform), None)
        return own if own is not None else spec.row(transform, self.rows_of or self.library)

    def transforms(self) -> dict[str, Callable[[], Op]]:
        return importlib.import_module(self.module).transforms(self.input)

    def pipelines(self, batched: bool = False) -> dict[str, Callable[[], Op]]:
        kind = self.batch_input if batched else self.pipeline_input
        if kind is None:
            raise ValueError(f"{self.key} has no batch mode")
        return importlib.import_module(self.module).pipelines(kind)

    @property
    def task_key(self) -> str:
        """The library/variant whose task recipes it runs (tasks.SUPPORT)."""
        return f"{self.rows_of or self.library}/{self.variant}"

    def task_recipes(self) -> dict[str, Callable[[], TaskOp]]:
        """Segmentation, crop-ocr, ... (augment/tasks.py): an adapter without them has none."""
        build = getattr(importlib.import_module(self.module), "task_recipes", None)
        return {} if build is None else build(self.pipeline_input)


def _pillow_simd_problem() -> str | None:
    from imgbench.readers.registry import pillow_simd_problem_here

    return pillow_simd_problem_here()


def _albumentationsx_problem() -> str | None:
    """The albumentations module must be AlbumentationsX's (the main env's MIT one is behind it)."""
    from importlib import metadata

    import albumentations

    try:
        version = metadata.version("albumentationsx")
    except metadata.PackageNotFoundError:
        return "albumentationsx: not installed in this environment"
    if albumentations.__version__ != version:
        return f"albumentationsx: the albumentations module is {albumentations.__version__}"
    return None


LIBRARIES: tuple[AugmentLibrary, ...] = (
    AugmentLibrary(
        library="albumentations",
        variant="numpy",
        quick=True,
        module="imgbench.augment.libs.albumentations",
        requires=("cv2", "albumentations"),
        dist="albumentations",
        input="hwc-uint8",
        pipeline_input="hwc-uint8",
        parallel=True,  # OpenCV kernels use OpenCV's thread pool
    ),
    AugmentLibrary(
        library="torchvision",
        variant="v2-tensor",
        quick=True,
        module="imgbench.augment.libs.torchvision",
        requires=("torch", "torchvision"),
        dist="torchvision",
        input="chw-uint8-tensor",
        pipeline_input="chw-uint8-tensor",
        batch_input="bchw-uint8-tensor",
        parallel=True,  # torch intra-op threads
    ),
    AugmentLibrary(
        library="torchvision",
        variant="v2-pil",
        module="imgbench.augment.libs.torchvision",
        requires=("torch", "torchvision", "PIL"),
        dist="torchvision",
        input="pil",
        pipeline_input="pil",
        parallel=True,  # the float steps after ToImage run in torch
    ),
    AugmentLibrary(
        library="kornia",
        variant="tensor",
        module="imgbench.augment.libs.kornia",
        requires=("torch", "kornia"),
        dist="kornia",
        input="chw-float-tensor",
        pipeline_input="chw-uint8-tensor",
        batch_input="bchw-uint8-tensor",
        parallel=True,
    ),
    AugmentLibrary(
        library="pillow",
        variant="pil",
        quick=True,
        module="imgbench.augment.libs.pillow",
        requires=("PIL",),
        dist="pillow",
        input="pil",
        pipeline_input="pil",
    ),
    AugmentLibrary(
        library="opencv",
        variant="numpy",
        module="imgbench.augment.libs.opencv",
        requires=("cv2",),
        dist="opencv-python-headless",
        input="hwc-uint8",
        pipeline_input="hwc-uint8",
        parallel=True,
    ),
    # the same adapters in the isolated envs that replace their import package: the rows say
    # pillow-simd / albumentationsx, with those distributions' versions
    AugmentLibrary(
        library="pillow-simd",
        variant="pil",
        module="imgbench.augment.libs.pillow",
        requires=("PIL",),
        dist="pillow-simd",
        environment="pillow-simd",
        input="pil",
        pipeline_input="pil",
        rows_of="pillow",
        check=_pillow_simd_problem,
    ),
    AugmentLibrary(
        library="albumentationsx",
        variant="numpy",
        module="imgbench.augment.libs.albumentations",
        requires=("cv2", "albumentations"),
        dist="albumentationsx",
        environment="albumentationsx",
        input="hwc-uint8",
        pipeline_input="hwc-uint8",
        parallel=True,
        rows_of="albumentations",
        check=_albumentationsx_problem,
        note="AlbumentationsX (AGPL-3.0), the successor of MIT albumentations 2.0.8",
    ),
)


def get_library(key: str) -> AugmentLibrary:
    """A library by ``library/variant`` key, e.g. ``torchvision/v2-tensor``."""
    return find(libraries(), key, "augmentation library")


def libraries() -> tuple[AugmentLibrary, ...]:
    """The built-in libraries, then those other packages register (``imgbench.augment``)."""
    return catalog("augment", LIBRARIES, AugmentLibrary)


# Libraries the posts use that cannot run on this stack: listed by `imgbench env`.
UNAVAILABLE: tuple[tuple[str, str], ...] = (
    (
        "imgaug",
        "imgaug 0.4.0 (2020, the last release) installs but fails at import with numpy 2: "
        "`np.sctypes` was removed in NumPy 2.0",
    ),
    (
        "augly",
        "augly 1.0.0 installs and imports with numpy 2, but is not measured yet: no adapter "
        "(its perspective_transform also fails on the removed `np.float`)",
    ),
)
