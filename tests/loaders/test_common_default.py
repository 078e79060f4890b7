"""The common default is the pipeline users write: ``ImageFolder``'s ``Image.open(f).convert("RGB")``
straight into torchvision's v2 transforms, with no NumPy round trip in between.

Checked against torchvision's own ``ImageFolder`` with the recipe written out as a training
script writes it (same files, same seed: identical tensors), and by what the pipeline calls
(a profiler hook on the real calls, no mocks): the decoded image reaches the transforms as a PIL
image, and the only arrays taken from a PIL image are the 224 x 224 crops torchvision's
``ToImage`` converts.
"""

from __future__ import annotations

import functools
import io
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

import numpy as np
import pytest
import torch
from PIL import Image
from torch.utils.data import default_collate
from torchvision import datasets
from torchvision.transforms import v2

from imgbench.answer.rows import Configuration
from imgbench.loaders import cases
from imgbench.loaders.pipeline import (
    ARRAY,
    NO_AUGMENT,
    PipelineConfig,
    SamplePipeline,
    collate,
    handoff,
)
from imgbench.loaders.plan import LoaderPlan
from imgbench.loaders.registry import pipeline_config
from imgbench.measure.context import CaseContext
from imgbench.profiles import get_profile
from imgbench.readers.libs.pillow import PillowReader, pil_to_rgb8, pil_to_rgb_image

COMMON_DEFAULT = pipeline_config("common-default")


def plain_transform() -> v2.Compose:
    """The train recipe as a training script writes it (numbers, not imgbench's constants)."""
    return v2.Compose(
        [
            v2.RandomResizedCrop(224, antialias=True),
            v2.RandomHorizontalFlip(),
            v2.ColorJitter(0.4, 0.4, 0.4, 0.1),
            v2.ToImage(),
            v2.ToDtype(torch.float32, scale=True),
            v2.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225]),
        ]
    )


def _pipeline(ctx: CaseContext, config: PipelineConfig = COMMON_DEFAULT) -> SamplePipeline:
    return SamplePipeline(cases.make_source(ctx, config), config)


def test_the_common_default_is_a_plain_imagefolder_script(
    photo_dir: Path, photo_ctx: CaseContext
) -> None:
    pipeline = _pipeline(photo_ctx)
    plain = datasets.ImageFolder(str(photo_dir), transform=plain_transform())
    where = {os.path.realpath(path): i for i, (path, _) in enumerate(plain.samples)}
    ours, theirs = [], []
    for i in range(len(pipeline)):
        torch.manual_seed(i)
        ours.append(pipeline[i])
        torch.manual_seed(i)
        theirs.append(plain[where[os.path.realpath(os.fsdecode(pipeline.source.paths[i]))]])
        assert torch.equal(ours[-1][0], theirs[-1][0]), f"sample {i} differs"
        assert ours[-1][1] == theirs[-1][1]
    images, labels, stage_s, _ = collate(ours)
    expected_images, expected_labels = default_collate(theirs)
    assert torch.equal(images, expected_images) and torch.equal(labels, expected_labels)
    assert images.shape == (len(pipeline), 3, 224, 224) and images.dtype == torch.float32
    assert stage_s.shape == (len(pipeline), 3) and bool((stage_s > 0).all())  # timed per part


@contextmanager
def calls() -> Iterator[list[tuple[str, str, FrameType]]]:
    """Every Python function called in this thread meanwhile: (file, name, frame)."""
    seen: list[tuple[str, str, FrameType]] = []

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event == "call":
            seen.append((frame.f_code.co_filename, frame.f_code.co_name, frame))

    sys.setprofile(profile)
    try:
        yield seen
    finally:
        sys.setprofile(None)


def _named(seen: list[tuple[str, str, FrameType]], module: str, name: str) -> list[FrameType]:
    suffix = str(Path(*module.split("."))) + ".py"
    return [frame for file, called, frame in seen if called == name and file.endswith(suffix)]


def _trace(pipeline: SamplePipeline, samples: int) -> list[tuple[str, str, FrameType]]:
    pipeline.build()  # imports and recipe built before the trace: only per-sample calls count
    with calls() as seen:
        for i in range(samples):
            pipeline[i]
    return seen


def test_no_numpy_round_trip_between_pillow_and_torchvision(photo_ctx: CaseContext) -> None:
    seen = _trace(_pipeline(photo_ctx), 4)
    assert len(_named(seen, "PIL.Image", "open")) == 4
    assert len(_named(seen, "PIL.Image", "convert")) >= 4  # ImageFolder's convert("RGB")
    assert _named(seen, "PIL.Image", "fromarray") == []
    assert _named(seen, "imgbench.augment.base", "make_input") == []
    assert _named(seen, "imgbench.readers.libs.pillow", "pil_to_rgb8") == []
    taken = [
        frame.f_locals["self"].size for frame in _named(seen, "PIL.Image", "__array_interface__")
    ]
    assert taken and set(taken) == {(224, 224)}  # ToImage on the crops, never the decoded photo


def test_the_trace_sees_a_round_trip_where_there_is_one(photo_ctx: CaseContext) -> None:
    """OpenCV declares no native image: its array goes back to a PIL image for the same recipe."""
    config = PipelineConfig(decoder="opencv/imdecode-rgb", augment="torchvision/v2-pil")
    assert handoff(config) == ARRAY
    seen = _trace(_pipeline(photo_ctx, config), 2)
    assert len(_named(seen, "PIL.Image", "fromarray")) == 2
    assert len(_named(seen, "imgbench.augment.base", "make_input")) == 2


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        (COMMON_DEFAULT, "pil"),
        (pipeline_config("pillow-pil"), "pil"),  # Pillow's own recipe takes PIL images too
        (PipelineConfig(decoder="pillow/open-convert"), ARRAY),  # albumentations takes arrays
        (PipelineConfig(decoder="pillow/open-convert", augment=NO_AUGMENT), ARRAY),
        (PipelineConfig(decoder="pillow/draft", augment="torchvision/v2-pil"), ARRAY),
        (PipelineConfig(augment="torchvision/v2-tensor"), ARRAY),
    ],
)
def test_the_handoff_is_what_both_sides_declare(config: PipelineConfig, expected: str) -> None:
    assert handoff(config) == expected


def _encoded(image: Image.Image) -> bytes:
    out = io.BytesIO()
    image.save(out, format="TIFF" if image.mode == "CMYK" else "PNG")
    return out.getvalue()


RGBA = Image.fromarray(np.random.default_rng(0).integers(0, 256, (9, 13, 4), dtype=np.uint8))
MODES: dict[str, Callable[[], Image.Image]] = {
    mode: functools.partial(RGBA.convert, mode)
    for mode in ("RGB", "RGBA", "RGBa", "LA", "L", "P", "1", "CMYK", "YCbCr", "HSV")
}
MODES["I;16"] = lambda: Image.fromarray(
    np.random.default_rng(1).integers(0, 65535, (9, 13), dtype=np.uint16)
)
MODES["PA"] = lambda: RGBA.convert("P").convert("PA")


@pytest.mark.parametrize("mode", sorted(MODES))
def test_the_native_image_has_the_readers_pixels(mode: str) -> None:
    """``convert("RGB")`` where it is the pixel policy, the policy's array where it is not (16-bit
    gray, premultiplied alpha): the handoff changes no pixel."""
    image = MODES[mode]()
    native = pil_to_rgb_image(image)
    assert native.mode == "RGB"
    assert np.array_equal(np.asarray(native), pil_to_rgb8(image))


def test_decode_native_decodes_what_decode_does(photo_dir: Path) -> None:
    reader = PillowReader()
    for path in sorted(photo_dir.rglob("*.jpg"))[:2]:
        data = path.read_bytes()
        assert np.array_equal(np.asarray(reader.decode_native(data)), reader.decode(data))
    for image in (MODES["I;16"](), MODES["LA"](), MODES["L"](), MODES["CMYK"]()):
        data = _encoded(image)
        assert np.array_equal(np.asarray(reader.decode_native(data)), reader.decode(data))


def test_a_truncated_jpeg_fails_the_native_decode_by_name(photo_dir: Path) -> None:
    data = next(photo_dir.rglob("*.jpg")).read_bytes()
    with pytest.raises(OSError, match="truncated"):
        PillowReader().decode_native(data[: len(data) // 2])


def test_the_common_default_row_is_still_the_baseline(photo_ctx: CaseContext) -> None:
    """The loader case checks its first batch, records the handoff, and is the row the answer
    takes for the common default."""
    plan = get_profile("quick").plan(LoaderPlan)
    case = cases.loader_case("torch-dataloader", 0, plan=plan, config=COMMON_DEFAULT)
    workload = case.prepare(photo_ctx, case)
    assert workload.close is not None
    try:
        assert workload.extra["first_batch_check"] == "pass"
        assert workload.extra["sample_handoff"] == "pil"
        workload.fn(workload.items[0])
    finally:
        workload.close()
    row = {"library": case.library, "variant": case.variant, "params_json": case.params}
    assert Configuration.of(row).is_common_default
