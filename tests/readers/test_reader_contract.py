"""Every reader that runs here honours the contract on real photos and on every kind of odd file.

Contract: C-contiguous HxWx3 uint8 RGB, EXIF orientation not applied, alpha dropped, 16-bit to
the high byte, palette expanded, gray replicated; a bad file raises an error with a message.
"""

from __future__ import annotations

import numpy as np
import pytest

from imgbench.readers.base import ContractError, ReaderSpec, check_contract
from imgbench.readers.registry import READERS, build_reader
from imgbench.readers.verify import reference_decode, tolerance, verify_item
from tests.readers.images import PHOTOS, encode, odd_files, photo, photo_bytes

MAIN = [s for s in READERS if s.environment == "main"]
FULL = [pytest.param(s, id=f"{s.library}-{s.variant}") for s in MAIN if s.output == "full"]
REDUCED = [pytest.param(s, id=f"{s.library}-{s.variant}") for s in MAIN if s.output != "full"]
ODD = odd_files()

# Documented library behaviour (docs/readers.md): these return the decodable part of a damaged
# file instead of raising; verification flags it, so they are never timed on such a file.
RETURNS_PARTIAL = {("imagecodecs", "truncated-jpeg"), ("ajpegli", "truncated-jpeg")}
# ... and these always apply EXIF orientation (no option): verification flags a rotated file.
APPLIES_ORIENTATION = {"torchcodec"}
# JPEG decoders that are not libjpeg: the odd files' expected arrays are the photos before
# encoding, which libjpeg's own loss just meets (2.00 on chelsea q90); FFmpeg's mjpeg + swscale
# (spdl) adds 0.84 to it. These are held to the reference decode instead, as verification does.
NOT_LIBJPEG = {"spdl"}


def _reader(spec: ReaderSpec, reduce: int | None = None):
    try:
        return build_reader(spec, reduce=reduce)
    except ImportError as exc:
        pytest.skip(f"{spec.library}: not installed ({exc})")
    except Exception as exc:  # e.g. no CUDA, no libturbojpeg: the bench skips these too
        pytest.skip(f"{spec.library}/{spec.variant}: {exc}")


@pytest.mark.parametrize("spec", FULL)
@pytest.mark.parametrize("codec", ["jpeg", "png", "webp", "bmp", "tiff"])
def test_real_photos_match_the_reference(spec: ReaderSpec, codec: str, tmp_path) -> None:
    if codec not in spec.codecs:
        pytest.skip(f"{spec.library} does not decode {codec}")
    reader = _reader(spec)
    for name in PHOTOS:
        data = photo_bytes(name, codec)
        key = f"{name}.{codec}"
        verdict = verify_item(reader.decode, data, path=name, data=data, key=key, codec=codec)
        assert verdict.ok, f"{spec.library}/{spec.variant} on {name}.{codec}: {verdict.detail}"
        path = tmp_path / f"{name}.{codec}"
        path.write_bytes(data)
        verdict = verify_item(reader.read, str(path), path=name, data=data, key=key, codec=codec)
        assert verdict.ok, f"{spec.library}/{spec.variant} read({path}): {verdict.detail}"


@pytest.mark.parametrize("spec", FULL)
def test_channel_order_is_rgb(spec: ReaderSpec) -> None:
    reader = _reader(spec)
    red = np.zeros((32, 48, 3), np.uint8)
    red[..., 0] = 255
    out = reader.decode(encode(red, "jpeg", quality=95))
    assert out[..., 0].mean() > 240 and out[..., 2].mean() < 15, "BGR returned instead of RGB"


@pytest.mark.parametrize("spec", FULL)
@pytest.mark.parametrize("kind", sorted(ODD))
def test_odd_file_gives_policy_array_or_clear_error(spec: ReaderSpec, kind: str) -> None:
    codec, data, expected = ODD[kind]
    if codec not in spec.codecs:
        pytest.skip(f"{spec.library} does not decode {codec}")
    reader = _reader(spec)
    if kind.startswith("bomb"):  # never handed to a reader: the guard stops it first
        verdict = verify_item(reader.decode, data, path=kind, data=data, key=kind, codec=codec)
        assert not verdict.ok and verdict.detail.startswith("decompression bomb"), verdict
        return
    try:
        out = reader.decode(data)
    except Exception as exc:
        assert str(exc).strip(), f"{type(exc).__name__} without a message"
        assert expected is None or kind == "cmyk-jpeg", f"{kind}: {exc!r}"
        return
    if expected is None:
        assert (spec.library, kind) in RETURNS_PARTIAL, f"{kind}: returned {out.shape} silently"
        verdict = verify_item(reader.decode, data, path=kind, data=data, key=kind, codec=codec)
        assert not verdict.ok, "verification must flag a damaged file"
        return
    if kind == "exif-rotated-jpeg" and spec.library in APPLIES_ORIENTATION:
        assert out.shape[:2] == expected.shape[1::-1], "orientation 6 turns the image"
        verdict = verify_item(reader.decode, data, path=kind, data=data, key=kind, codec=codec)
        assert not verdict.ok, "verification must flag a rotated output"
        return
    check_contract(out, who=f"{spec.library} {kind}", expected_shape=expected.shape[:2])
    if kind == "cmyk-jpeg":  # naive (Pillow, OpenCV) vs ICC (libvips) conversions differ
        return
    if codec == "jpeg" and spec.library in NOT_LIBJPEG:  # judged as the verification judges it
        expected = reference_decode(data)
    mae = float(np.abs(out.astype(np.int16) - expected.astype(np.int16)).mean())
    assert mae <= tolerance(codec, "full"), f"{kind}: mean abs error {mae:.2f}"


@pytest.mark.parametrize("spec", REDUCED)
@pytest.mark.parametrize("reduce", [2, 4])
def test_reduced_and_resized_match_a_box_reduced_reference(spec: ReaderSpec, reduce: int) -> None:
    reader = _reader(spec, reduce)
    for name in PHOTOS:
        data = photo_bytes(name, "jpeg")
        verdict = verify_item(
            reader.decode,
            data,
            path=name,
            data=data,
            key=f"{name}.jpeg",
            codec="jpeg",
            output=spec.output,
            reduce=reduce,
        )
        assert verdict.ok, f"{spec.library}/{spec.variant} 1/{reduce} {name}: {verdict.detail}"
        h, w = photo(name).shape[:2]
        out = reader.decode(data)
        expected = (-(-h // reduce), -(-w // reduce))
        assert abs(out.shape[0] - expected[0]) <= 1 and abs(out.shape[1] - expected[1]) <= 1


def test_contract_checker_rejects_bad_outputs() -> None:
    good = np.zeros((4, 5, 3), np.uint8)
    check_contract(good, who="x", expected_shape=(4, 5))
    for bad in (good.astype(np.float32), good[..., :2], good[:, ::2], good.tolist()):
        with pytest.raises(ContractError):
            check_contract(bad, who="x", expected_shape=None)
    with pytest.raises(ContractError, match="expected"):
        check_contract(good, who="x", expected_shape=(5, 4))
