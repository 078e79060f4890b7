"""``imgbench profile`` names the step that bounds a pipeline built to be bound by it (decode,
augmentation on images decoded up front, collate), in Pillow, OpenCV and torchvision alike: the
attribution goes by what each function does, not by the library it belongs to."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import imgbench
from imgbench.profiling.result import ProfileResult
from tests.profiling.pipelines.bound import BOUNDS, LIBRARIES, Bound, one_thread


@pytest.fixture(scope="module")
def noisy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """8 JPEGs of 320x240, strong noise at q97: 90 KB each, twice the decode work of a smooth q90
    photo for the same pixels out. (A 320x240 torchvision decode took 1.3 ms against 4-5 ms for
    torch.stack of 8: on smooth photos collate came within 0.15 of decode.)"""
    root = tmp_path_factory.mktemp("noisy-photos")
    rng = np.random.default_rng(0)
    y, x = np.mgrid[0:240, 0:320]
    for i in range(8):
        base = np.stack(
            [128 + 100 * np.sin(x / (7 + i)), 128 + 100 * np.cos(y / 11), (x + y) % 256], -1
        )
        pixels = np.clip(base + rng.normal(0, 40, base.shape), 0, 255).astype(np.uint8)
        Image.fromarray(pixels).save(root / f"noisy_{i}.jpg", quality=97)
    return root


# torchvision warns on every decode that its codecs are deprecated: recording 800 warnings slowed
# the module by seconds
@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::UserWarning")
@pytest.mark.parametrize(("library", "bound"), list(itertools.product(LIBRARIES, BOUNDS)))
def test_the_largest_share_names_the_bound(
    noisy: Path, tmp_path: Path, library: str, bound: str
) -> None:
    workers = 1 if bound == "collate" else 0  # collate/IPC: batches cross processes
    # shares seen at 0.6 s of samples (48-100 of them): decode 0.75-0.96 (next 0.19 at most),
    # augment 0.96-1.0, but collate 0.56-0.96 (a worker's epoch start is "other"): 1 s for it
    # (0.80-0.91 then). The throughput phase's rounds set its length (seconds is a floor); the AU
    # phase's two batches give the batch's dtype that the collate advice reads.
    sample_seconds = 1.0 if bound == "collate" else 0.7
    with one_thread():
        result = imgbench.profile(
            Bound(str(noisy), library, bound),
            workers=[workers],
            batch_size=8,
            seconds=0.1,
            au_seconds=0.05,
            sample_seconds=sample_seconds,
            results=tmp_path,
            compare_readers=False,
        )
    assert isinstance(result, ProfileResult)
    (config,) = result.configurations
    assert config.status == "ok", config.reason
    shares: dict[str, float] = config.extra["attribution"]
    assert max(shares, key=shares.__getitem__) == bound, shares
    advice = " ".join(result.advice)
    if bound == "augment":
        # an augmentation-bound pipeline gets no decoder advice
        assert "augment takes the largest share" in advice and "decode takes" not in advice
    elif bound == "decode":
        assert config.extra["decode_libraries"], config.extra
        named = {"pillow": "PIL", "opencv": "cv2", "torchvision": "torchvision.io"}[library]
        assert max(config.extra["decode_libraries"].items(), key=lambda kv: kv[1])[0] == named
        assert f"decode takes {shares['decode']:.0%} of the sampled time ({named})" in advice
    else:
        assert f"collate/IPC takes {shares['collate']:.0%}" in advice
