"""Loader rounds read cold on the real disk where the loader plan says ``cold_rounds`` (the real
disk's pass of make bench's disk sessions), and warm there otherwise, as before."""

from __future__ import annotations

from pathlib import Path

from imgbench.controls import case_context
from imgbench.datasets import load_dataset
from imgbench.datasets.synth import generate
from imgbench.loaders.cold import cold_cache
from imgbench.loaders.pipeline import FileSource
from imgbench.measure.cache import resident_fraction, warm
from imgbench.profiles import get_profile


def test_cold_rounds_evict_the_pool_on_the_real_disk(tmp_path: Path) -> None:
    root = generate(tmp_path / "src", 4, size=(64, 48), classes=2, progress=False)
    dataset = load_dataset(root, progress=False)
    paths = sorted(root.rglob("*.jpg"))
    assert paths
    source = FileSource([str(p) for p in paths], [0] * len(paths))
    default = get_profile("default")
    assert cold_cache(case_context(dataset, default), source, False) is None  # warm as before
    ctx = case_context(dataset, default.in_disk_session("none"))
    assert ctx.settings.disk_profile == "none"
    assert cold_cache(ctx, source, own_format=True) is None  # a store the loader builds itself
    cache = cold_cache(ctx, source, False)
    assert cache is not None and cache.state == "cold" and cache.method.startswith("cold: ")
    warm(paths)
    assert resident_fraction(paths) > 0.5
    cache.before_round()
    assert resident_fraction(paths) <= 0.02
