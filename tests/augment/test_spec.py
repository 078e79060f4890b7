"""The parameter table is complete, matches the adapters, and is what docs/augment.md shows."""

from __future__ import annotations

from pathlib import Path

import pytest

from imgbench.augment import spec
from imgbench.augment.pipelines import PIPELINES
from imgbench.augment.registry import LIBRARIES, UNAVAILABLE
from imgbench.augment.verify import _available
from imgbench.libraries import library_statuses

DOCS = Path(__file__).resolve().parents[2] / "docs" / "augment.md"
ISSUE_DETERMINISTIC = (
    "hflip", "vflip", "rotate90", "resize", "center_crop", "pad", "grayscale",
    "normalize", "to_tensor", "invert", "posterize", "solarize",
)  # fmt: skip


def test_at_least_25_transforms_with_a_row_per_library() -> None:
    assert len(spec.TRANSFORMS) >= 25
    for t in spec.TRANSFORMS:
        libraries = {r.library for r in spec.rows_for(t.name)}
        assert len(libraries) >= 4, f"{t.name} is in only {libraries}"
    assert {r.transform for r in spec.ROWS} == set(spec.TRANSFORM_BY_NAME)


def test_issue_deterministic_transforms_have_a_tolerance() -> None:
    for name in ISSUE_DETERMINISTIC:
        definition = spec.TRANSFORM_BY_NAME[name]
        assert definition.deterministic and definition.tolerance is not None, name


@pytest.mark.parametrize("lib", LIBRARIES, ids=lambda lib: lib.key)
def test_adapters_build_exactly_the_rows_of_the_table(lib) -> None:
    if not _available(lib):  # not installed, or it runs in its own env (pillow-simd, ...)
        pytest.skip(lib.unmet_requirement() or f"{lib.library} not available")
    in_table = {r.transform for r in spec.ROWS if r.library == (lib.rows_of or lib.library)}
    assert set(lib.transforms()) == in_table
    assert set(lib.pipelines()) == {p.name for p in PIPELINES}
    if lib.batch_input is not None:
        assert set(lib.pipelines(batched=True)) == {p.name for p in PIPELINES}


def test_docs_show_the_current_table() -> None:
    assert spec.markdown_table() in DOCS.read_text(), (
        "docs/augment.md is out of date: paste imgbench.augment.spec.markdown_table()"
    )


def test_env_lists_augment_libraries_and_imgaug_unavailable() -> None:
    statuses = [s for s in library_statuses() if s.stage == "augment"]
    names = {s.library: s for s in statuses}
    assert {"albumentations", "torchvision", "kornia", "pillow", "opencv"} <= set(names)
    assert names["albumentations"].available and names["albumentations"].version
    assert not names["imgaug"].available and "numpy" in names["imgaug"].reason.lower()
    assert dict(UNAVAILABLE)
