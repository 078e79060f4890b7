"""`imgbench dataset scan` summarises the manifest on disk, in memory bounded by distinct sizes,
and says exactly what the in-memory Manifest says."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from imgbench.datasets.manifest import _percentiles, _percentiles_of_counts
from imgbench.datasets.scan import scan_to_file


@pytest.mark.parametrize("seed", range(5))
def test_percentiles_of_counts_are_numpys(seed: int) -> None:
    rng = np.random.default_rng(seed)
    values = [float(v) for v in rng.integers(1, 40, size=int(rng.integers(1, 200)))]
    expected = _percentiles(values)
    got = _percentiles_of_counts(Counter(values))
    assert got == pytest.approx(expected, rel=1e-12)


def test_streamed_summary_equals_the_loaded_one(tmp_path: Path, imagenet_like: Path) -> None:
    # 24 of the package's ImageNet-sized photos (generated once for this and the sample tests)
    root = tmp_path / "photos"
    for path in sorted(imagenet_like.rglob("*.jpg"))[::4]:  # 6 of each of its 4 classes
        (root / path.parent.name).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, root / path.parent.name / path.name)
    (root / "class_001" / "truncated.jpg").write_bytes(b"\xff\xd8\xff\xe0garbage")
    (root / "class_002" / "flat.png").write_bytes(b"not an image at all")
    with scan_to_file(root, workers=1) as on_disk:
        streamed = on_disk.summary()
        loaded = on_disk.load().summary()
    assert streamed["n_bad"] == loaded["n_bad"] == 2
    assert streamed["count"] == loaded["count"] == 24
    for key in ("root", "fingerprint", "total_bytes", "codecs", "modes", "n_labels"):
        assert streamed[key] == loaded[key], key
    for key in ("width", "height", "megapixels"):
        assert streamed[key] == pytest.approx(loaded[key], rel=1e-12), key
    assert streamed["width"]["p5"] < streamed["width"]["p95"]  # the sizes really differ
    assert streamed["mean_megapixels"] == pytest.approx(loaded["mean_megapixels"], rel=1e-12)
