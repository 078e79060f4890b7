"""Scanning real folders: every kind of bad file gets one clear reason; the rest is used."""

from __future__ import annotations

import io
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from imgbench.datasets import DatasetError, Manifest, load_dataset, scan


def _jpeg(pixels: np.ndarray, **kw) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, "JPEG", quality=90, **kw)
    return buffer.getvalue()


def _chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def _png_header_only(width: int, height: int) -> bytes:
    """A 100-byte PNG whose header claims ``width`` x ``height``: a decompression bomb."""
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    idat = zlib.compress(b"\x00" * 64)
    return (
        b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", ihdr) + _chunk(b"IDAT", idat) + _chunk(b"IEND", b"")
    )


@pytest.fixture(scope="module")
def messy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("messy")
    rng = np.random.default_rng(0)
    photo = (rng.random((60, 80, 3)) * 255).astype(np.uint8)
    good = _jpeg(photo)
    files: dict[str, bytes] = {
        "cats/good.jpg": good,
        "cats/truncated.jpg": good[: len(good) // 2],
        "cats/zero.jpg": b"",
        "cats/text.jpg": b"hello, I am not an image\n" * 4,
        "dogs/png_named_jpg.jpg": _png(photo),
        "dogs/bomb.png": _png_header_only(100_000, 100_000),
        "dogs/anim.gif": _gif(photo),
    }
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    odd = root / "odd"
    odd.mkdir()
    Image.fromarray(photo).convert("CMYK").save(odd / "cmyk.jpg", "JPEG")
    Image.fromarray((rng.random((30, 40)) * 65535).astype(np.uint16)).save(odd / "gray16.png")
    Image.fromarray(photo).convert("P").save(odd / "palette.png")
    Image.fromarray(np.dstack([photo, photo[..., :1]])).save(odd / "alpha.png")
    (root / "notes.txt").write_text("not an image, ignored")
    return root


def _png(pixels: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, "PNG")
    return buffer.getvalue()


def _gif(pixels: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, "GIF")
    return buffer.getvalue()


def test_each_bad_file_has_a_clear_reason(messy: Path) -> None:
    manifest = scan(messy, use_cache=False)
    reasons = {b.path: b.reason for b in manifest.bad}
    assert reasons["cats/truncated.jpg"].startswith("truncated JPEG")
    assert reasons["cats/zero.jpg"] == "zero bytes"
    assert reasons["cats/text.jpg"] == "not an image (unknown format)"
    assert reasons["dogs/bomb.png"].startswith("decompression bomb: 100000x100000")
    assert "unsupported format GIF" in reasons["dogs/anim.gif"]
    assert "notes.txt" not in reasons  # not an image file at all: ignored, not "bad"


def test_odd_but_valid_images_are_kept_with_their_mode(messy: Path) -> None:
    entries = {e.path: e for e in scan(messy, use_cache=False).entries}
    assert entries["dogs/png_named_jpg.jpg"].codec == "png"  # by content, not by extension
    assert entries["odd/cmyk.jpg"].mode == "CMYK"
    assert entries["odd/gray16.png"].mode.startswith("I")
    assert entries["odd/palette.png"].mode == "P"
    assert entries["odd/alpha.png"].mode == "RGBA"
    assert entries["cats/good.jpg"].label == "cats"


def test_dataset_uses_the_rest(messy: Path) -> None:
    dataset = load_dataset(str(messy), progress=False)
    assert dataset.n_images == 6
    assert dataset.codec == "mixed"
    assert all(p.is_file() for p in dataset.paths())


def test_flat_folder_has_no_labels(tmp_path: Path) -> None:
    photo = np.full((20, 30, 3), 120, np.uint8)
    for i in range(3):
        (tmp_path / f"{i}.jpg").write_bytes(_jpeg(photo))
    manifest = scan(tmp_path)
    assert [e.label for e in manifest.entries] == [None, None, None]


def test_missing_empty_and_imageless_folders(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match=r"dataset path does not exist: .*/nope"):
        load_dataset(str(tmp_path / "nope"))
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(DatasetError, match="dataset folder is empty"):
        scan(empty)
    texts = tmp_path / "texts"
    texts.mkdir()
    (texts / "a.txt").write_text("x")
    with pytest.raises(DatasetError, match="no images in"):
        scan(texts)
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "a.jpg").write_bytes(b"")
    with pytest.raises(DatasetError, match=r"no usable images .* a\.jpg: zero bytes"):
        scan(broken)
    with pytest.raises(DatasetError, match="unknown dataset 'no-such-recipe'"):
        load_dataset("no-such-recipe")


def test_manifest_parquet_round_trip(messy: Path, tmp_path: Path) -> None:
    manifest = scan(messy, use_cache=False)
    manifest.to_parquet(tmp_path / "m.parquet")
    back = Manifest.from_parquet(tmp_path / "m.parquet")
    assert back.entries == manifest.entries
    assert back.bad == manifest.bad
    assert back.fingerprint == manifest.fingerprint


def test_rescan_uses_the_cache_and_sees_changes(tmp_path: Path) -> None:
    photo = np.full((20, 30, 3), 90, np.uint8)
    (tmp_path / "a.jpg").write_bytes(_jpeg(photo))
    first = scan(tmp_path)
    assert (tmp_path / ".imgbench-manifest.parquet").is_file()
    assert scan(tmp_path).fingerprint == first.fingerprint
    (tmp_path / "b.jpg").write_bytes(_jpeg(photo + 1))
    assert len(scan(tmp_path).entries) == 2
