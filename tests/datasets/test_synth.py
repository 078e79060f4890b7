"""The synthetic generator: deterministic, photo-like in compressed size, ImageFolder layout."""

from __future__ import annotations

import csv
import io
import random
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from imgbench.datasets import bank, detail, scan
from imgbench.datasets.bank import compose
from imgbench.datasets.sample import natural_photos
from imgbench.datasets.synth import SynthSpec, encode, generate, imagenet_size

QUALITIES = (75, 90, 95)


def _kb_per_mp(data: bytes, w: int, h: int) -> float:
    return len(data) / 1e3 / (w * h / 1e6)


def test_same_arguments_same_bytes_and_fingerprint(tmp_path: Path) -> None:
    # 40 images: two workers mapping banks built once vs one process building its own
    a = generate(tmp_path / "a", 40, size=(160, 120), classes=3, seed=7, progress=False, workers=2)
    b = generate(tmp_path / "b", 40, size=(160, 120), classes=3, seed=7, progress=False, workers=1)
    assert [p.name for p in a.iterdir() if p.name.startswith(".")] == []  # no banks left behind
    files_a = sorted(p.relative_to(a) for p in a.rglob("*.jpg"))
    assert files_a == sorted(p.relative_to(b) for p in b.rglob("*.jpg"))
    for rel in files_a:
        assert (a / rel).read_bytes() == (b / rel).read_bytes()
    assert scan(a).fingerprint == scan(b).fingerprint
    other = generate(tmp_path / "c", 40, size=(160, 120), classes=3, seed=8, progress=False)
    assert scan(other).fingerprint != scan(a).fingerprint


def test_imagefolder_layout_and_labels_file(tmp_path: Path) -> None:
    out = generate(tmp_path / "s", 10, size=(64, 48), classes=4, progress=False)
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == [
        f"class_{i:03d}" for i in range(4)
    ]
    rows = list(csv.DictReader((out / "labels.csv").open()))
    assert len(rows) == 10
    assert rows[5] == {"path": "class_001/00000005.jpg", "label": "class_001"}
    manifest = scan(out)
    assert {e.label for e in manifest.entries} == {f"class_{i:03d}" for i in range(4)}
    assert all((e.width, e.height, e.codec) == (64, 48, "jpeg") for e in manifest.entries)


@pytest.mark.parametrize("codec", ["png", "webp", "bmp", "tiff"])
def test_other_codecs(tmp_path: Path, codec: str) -> None:
    out = generate(tmp_path / codec, 2, size=(40, 30), codec=codec, classes=1, progress=False)
    manifest = scan(out, use_cache=False)
    assert {e.codec for e in manifest.entries} == {codec} and len(manifest.entries) == 2


def test_subsampling_is_applied() -> None:
    pixels = compose(0, 0, 128, 96, 1.0)
    sizes = {s: len(encode(pixels, "jpeg", 90, s)) for s in ("444", "422", "420")}
    assert sizes["444"] > sizes["422"] > sizes["420"]


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        SynthSpec(n=1)
    with pytest.raises(ValueError, match="codec"):
        SynthSpec(n=1, size=(10, 10), codec="gif")
    with pytest.raises(ValueError, match="subsampling"):
        SynthSpec(n=1, size=(10, 10), subsampling="411")


def test_imagenet_sizes_look_like_imagenet() -> None:
    rng = random.Random(0)
    sizes = np.array([imagenet_size(rng) for _ in range(4000)])
    short = sizes.min(axis=1)
    long_edge = sizes.max(axis=1)
    in_band = np.mean((short >= 281) & (short <= 500))
    assert 0.8 <= in_band <= 0.97, in_band  # most between 300 and 500 on the short side
    assert 0.03 <= np.mean(long_edge >= 800) <= 0.15  # a tail of large photos
    assert np.median(long_edge) == 500


@pytest.mark.parametrize("quality", QUALITIES)
def test_bytes_per_megapixel_within_30_percent_of_real_photos(quality: int) -> None:
    """Same quality, same sizes: synthetic JPEGs compress like the real sample's photos."""
    real = []
    synthetic = []
    for index, pixels in enumerate(natural_photos().values()):
        h, w = pixels.shape[:2]
        buffer = io.BytesIO()
        Image.fromarray(pixels).save(buffer, "JPEG", quality=quality, subsampling=2)
        real.append(_kb_per_mp(buffer.getvalue(), w, h))
        for seed in range(3):
            data = encode(compose(seed, index, w, h, 1.0), "jpeg", quality, "420")
            synthetic.append(_kb_per_mp(data, w, h))
    ratio = np.median(synthetic) / np.median(real)
    assert 0.7 <= ratio <= 1.3, (
        f"q{quality}: synthetic {np.median(synthetic):.0f} KB/MP vs real {np.median(real):.0f}"
    )


def test_content_is_neither_noise_nor_flat() -> None:
    spreads = []
    for index in range(8):
        pixels = np.asarray(compose(0, index, 256, 192, 1.0).convert("RGB"), dtype=float)
        gray = pixels.mean(axis=2)
        neighbour_corr = np.corrcoef(gray[:, :-1].ravel(), gray[:, 1:].ravel())[0, 1]
        assert neighbour_corr > 0.8  # smooth like a photo, unlike noise
        spreads.append(gray.std())
    assert np.median(spreads) > 20 and min(spreads) > 10  # has content, unlike a flat image


def test_images_are_windows_that_differ_and_repeat() -> None:
    """Banks are shared, yet image i is its own window, the same in any process and order."""
    first = [np.asarray(compose(5, i, 200, 150, 1.0)).copy() for i in range(6)]
    assert all(not np.array_equal(first[0], other) for other in first[1:])
    bank.clear()  # rebuilt from the seed: the same pixels
    again = [np.asarray(compose(5, i, 200, 150, 1.0)) for i in reversed(range(6))]
    assert all(np.array_equal(a, b) for a, b in zip(first, reversed(again), strict=True))
    portrait = compose(5, 0, 150, 200, 1.0)
    assert portrait.size == (150, 200)


def test_detail_spans_smooth_to_busy_photos() -> None:
    """low / medium / high bracket 100-400 KB/MP at q90, and a target size is met."""
    low, high = (detail.kb_per_mp(detail.PRESETS[name], 90) for name in ("low", "high"))
    assert low <= 140 and high >= 400, (low, high)
    level = detail.parse_detail("250kb@q90")
    assert abs(detail.kb_per_mp(level, 90) - 250) < 250 * 0.05
    assert detail.parse_detail("250kb", quality=90) == level
    assert detail.parse_detail("high") == detail.PRESETS["high"]
    assert detail.parse_detail("1.5") == 1.5


def test_detail_changes_the_bytes_of_a_dataset(tmp_path: Path) -> None:
    def mean_bytes(level: float) -> float:
        out = generate(tmp_path / str(level), 6, size=(320, 240), detail=level, progress=False)
        return float(np.mean([p.stat().st_size for p in out.rglob("*.jpg")]))

    assert mean_bytes(detail.PRESETS["low"]) < mean_bytes(1.0) < mean_bytes(detail.PRESETS["high"])


def test_bad_detail_is_one_clear_error() -> None:
    with pytest.raises(ValueError, match="detail must be low, medium, high"):
        detail.parse_detail("busy")
    with pytest.raises(ValueError, match="out of reach"):
        detail.parse_detail("5000kb@q90")
    with pytest.raises(ValueError, match="between 0 and"):
        detail.parse_detail("-1")
