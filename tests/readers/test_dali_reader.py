"""DALI's CPU decoder as a reader: it passes imgbench's verification against the reference decode,
names what it cannot decode, and decodes the next image after a failure.

The registry-wide contract tests (tests/readers/test_reader_contract.py) run it on every codec and
odd file too; these cover what is DALI's own: its pipeline is invalidated by a failed decode.
"""

from __future__ import annotations

import io
import multiprocessing
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from imgbench.library import missing_module
from imgbench.readers.registry import build_reader, find_spec
from imgbench.readers.verify import load_images, verify_item, verify_reader
from tests.readers.images import PHOTOS, encode, photo, photo_bytes

NO_DALI = missing_module("dali", ("nvidia.dali",))
pytestmark = pytest.mark.skipif(NO_DALI is not None, reason=NO_DALI or "")
SPEC = find_spec("dali", "decoders-image")


@pytest.fixture(scope="module")
def reader():
    return build_reader(SPEC)


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    """Real photos as JPEG and PNG, plus a truncated JPEG, a zero-byte .jpg, a PNG named .jpg."""
    for name in PHOTOS:
        (tmp_path / f"{name}.jpg").write_bytes(photo_bytes(name, "jpeg"))
        (tmp_path / f"{name}.png").write_bytes(photo_bytes(name, "png"))
    jpeg = photo_bytes("coffee", "jpeg")
    (tmp_path / "truncated.jpg").write_bytes(jpeg[: len(jpeg) // 2])
    (tmp_path / "empty.jpg").write_bytes(b"")
    (tmp_path / "really-a-png.jpg").write_bytes(photo_bytes("chelsea", "png"))
    return tmp_path


def test_the_reader_verifies_on_a_dataset(dataset: Path) -> None:
    images = load_images(str(dataset), max_images=8)
    names = {path for _, path, _, _ in images.images}
    assert "truncated.jpg" not in names and "empty.jpg" not in names  # the scan named them
    report = verify_reader(SPEC, images.images, reduce=2, environment="main")
    assert report.status == "ran", report.reason
    assert len(report.verdicts) == 2 * len(PHOTOS) + 1
    assert report.failures == 0, [v.detail for _, v in report.verdicts if not v.ok]


@pytest.mark.parametrize(
    ("kind", "data"),
    [
        ("truncated", photo_bytes("coffee", "jpeg")[:9000]),
        ("zero-byte", b""),
        ("not-an-image", b"this is not an image"),
    ],
)
def test_a_bad_file_is_a_clear_error_and_the_next_decode_works(
    reader, kind: str, data: bytes
) -> None:
    with pytest.raises(RuntimeError, match=r"^DALI fn\.decoders\.image: \S") as failed:
        reader.decode(data)
    assert "Current pipeline object" not in str(failed.value)  # DALI's trailer is cut
    verdict = verify_item(reader.decode, data, path=kind, data=data, key=kind, codec="jpeg")
    assert not verdict.ok
    good = photo_bytes("astronaut", "jpeg")
    verdict = verify_item(reader.decode, good, path="a", data=good, key="a", codec="jpeg")
    assert verdict.ok, verdict.detail


def test_a_png_named_jpg_decodes_by_its_content(reader) -> None:
    out = reader.decode(photo_bytes("chelsea", "png"))
    assert np.array_equal(out, photo("chelsea"))


def test_exif_orientation_is_not_applied(reader) -> None:
    image = Image.fromarray(photo("chelsea"))
    exif = Image.Exif()
    exif[0x0112] = 6  # rotate 90 degrees on display
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", quality=95, exif=exif)
    assert reader.decode(buffer.getvalue()).shape == photo("chelsea").shape
    assert reader.decode(encode(photo("coffee"), "jpeg")).flags.c_contiguous


def test_threads_decode_at_once_each_with_its_own_pipeline(reader) -> None:
    items = [photo_bytes(name, "jpeg") for name in PHOTOS] * 4
    with ThreadPoolExecutor(4) as pool:
        outs = list(pool.map(reader.decode, items))
    for data, out in zip(items, outs, strict=True):
        assert np.array_equal(out, reader.decode(data))


_PARENTS: list[Any] = []  # the reader built in the parent, reached by the forked child


def _decode_in_child(data: bytes) -> tuple[tuple[int, ...], int]:
    out = _PARENTS[0].decode(data)
    return out.shape, int(out.sum(dtype=np.int64))


@pytest.mark.timeout(90)
def test_a_decoder_built_before_a_fork_decodes_in_the_child(reader) -> None:
    """As a DataLoader's forked worker uses the decoder its parent built."""
    data = photo_bytes("coffee", "jpeg")
    want = reader.decode(data)
    _PARENTS[:] = [reader]
    with multiprocessing.get_context("fork").Pool(1) as pool:
        shape, total = pool.apply_async(_decode_in_child, (data,)).get(timeout=60)
    assert shape == want.shape and total == int(want.sum(dtype=np.int64))
