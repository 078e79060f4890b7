"""Every registered reader that imports here honours the contract on real encoded images."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from imgbench.harness.case import Case
from imgbench.readers.base import ContractError, check_contract
from imgbench.readers.registry import READERS, build_reader


def _available(spec) -> bool:
    probe = Case(
        stage="read",
        library=spec.library,
        variant=spec.variant,
        prepare=None,
        requires=spec.requires,
    )  # type: ignore[arg-type]
    return probe.unmet_requirement() is None


SPECS = [pytest.param(s, id=f"{s.library}-{s.variant}") for s in READERS]


def _encode(pixels: np.ndarray, fmt: str, **kw) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format=fmt, **kw)
    return buffer.getvalue()


def _photo(h: int = 120, w: int = 160) -> np.ndarray:
    y, x = np.mgrid[0:h, 0:w]
    return np.stack([x * 255 // w, y * 255 // h, (x ^ y) & 255], axis=-1).astype(np.uint8)


@pytest.mark.parametrize("spec", SPECS)
@pytest.mark.parametrize(
    ("fmt", "kw", "tolerance"),
    [
        ("JPEG", {"quality": 95}, 3.0),
        ("PNG", {}, 0.0),
        ("WEBP", {"lossless": True}, 0.0),
        ("BMP", {}, 0.0),
        ("TIFF", {}, 0.0),
    ],
)
def test_output_matches_reference(spec, fmt, kw, tolerance) -> None:
    if not _available(spec):
        pytest.skip(f"{spec.library} not installed")
    if fmt.lower().replace("jpeg", "jpeg") not in spec.codecs and fmt.lower() not in spec.codecs:
        pytest.skip(f"{spec.library} does not decode {fmt}")
    pixels = _photo()
    data = _encode(pixels, fmt, **kw)
    reference = np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))
    out = build_reader(spec).decode(data)
    check_contract(out, who=spec.library, expected_shape=pixels.shape[:2])
    mae = np.abs(out.astype(np.int16) - reference.astype(np.int16)).mean()
    assert mae <= tolerance, f"{spec.library}/{fmt}: mean abs error {mae:.2f} vs Pillow"


@pytest.mark.parametrize("spec", SPECS)
def test_channel_order_is_rgb(spec) -> None:
    if not _available(spec):
        pytest.skip(f"{spec.library} not installed")
    red = np.zeros((32, 32, 3), np.uint8)
    red[..., 0] = 255
    out = build_reader(spec).decode(_encode(red, "JPEG", quality=95))
    assert out[..., 0].mean() > 240 and out[..., 2].mean() < 15, "BGR returned instead of RGB"


@pytest.mark.parametrize("spec", SPECS)
def test_grayscale_becomes_three_channels(spec) -> None:
    if not _available(spec):
        pytest.skip(f"{spec.library} not installed")
    gray = _photo()[..., 0]
    out = build_reader(spec).decode(_encode(gray, "PNG"))
    check_contract(out, who=spec.library, expected_shape=gray.shape)
    assert (out[..., 0] == gray).all() and (out[..., 1] == gray).all()


@pytest.mark.parametrize("spec", SPECS)
def test_garbage_raises_clear_error(spec) -> None:
    if not _available(spec):
        pytest.skip(f"{spec.library} not installed")
    with pytest.raises(Exception) as excinfo:
        build_reader(spec).decode(b"this is not an image")
    assert str(excinfo.value)


def test_contract_checker_rejects_bad_outputs() -> None:
    good = np.zeros((4, 5, 3), np.uint8)
    check_contract(good, who="x", expected_shape=(4, 5))
    for bad in (good.astype(np.float32), good[..., :2], good[:, ::2], good.tolist()):
        with pytest.raises(ContractError):
            check_contract(bad, who="x", expected_shape=None)
    with pytest.raises(ContractError, match="expected"):
        check_contract(good, who="x", expected_shape=(5, 4))
