"""Every reader imgbench knows. Adding a library is one adapter file plus one entry here."""

from __future__ import annotations

from imgbench.readers.base import ReaderSpec

READERS: tuple[ReaderSpec, ...] = (
    ReaderSpec(
        library="pillow",
        variant="open-convert",
        adapter="imgbench.readers.pillow:PillowReader",
        requires=("PIL",),
        dist="pillow",
    ),
    ReaderSpec(
        library="opencv",
        variant="imdecode-rgb",
        adapter="imgbench.readers.opencv:ImdecodeRGB",
        requires=("cv2",),
        dist="opencv-python-headless",
    ),
    ReaderSpec(
        library="opencv",
        variant="imdecode-cvtcolor",
        adapter="imgbench.readers.opencv:ImdecodeCvtColor",
        requires=("cv2",),
        dist="opencv-python-headless",
    ),
)


def build_reader(spec: ReaderSpec) -> object:
    """Import the adapter module and instantiate it (the library is imported here, not before)."""
    import importlib

    module_name, class_name = spec.adapter.split(":")
    return getattr(importlib.import_module(module_name), class_name)()


# Readers that posts use but that cannot run on a current stack: listed by `imgbench env`.
UNAVAILABLE: tuple[tuple[str, str], ...] = (
    (
        "scipy.misc.imread",
        "removed in SciPy 1.2 (2019); its replacement is imageio, measured as `imageio`",
    ),
    (
        "mxnet mx.image.imdecode",
        "Apache MXNet is retired (moved to the Attic in 2023); no wheels for Python 3.11 + numpy 2",
    ),
)
