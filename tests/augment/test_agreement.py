"""The libraries agree on real photos within the stated tolerances, except the known findings.

Each known disagreement must still be measured as one (so a release that fixes it shows up),
and nothing else may be flagged. Random transforms must pass their shape, dtype and range check.
"""

from __future__ import annotations

import pytest

from imgbench.augment import spec, verify
from imgbench.augment.pipelines import PIPELINES

pytest.importorskip("skimage")


@pytest.mark.parametrize("name", [t.name for t in spec.TRANSFORMS])
def test_transform_agreement(name: str) -> None:
    results = verify.check_transform(name)
    assert results, f"no library ran {name}"
    for a in results:
        assert a.status != "error", f"{name} {a.key}: {a.detail}"
        known = (name, a.key) in spec.KNOWN_DISAGREEMENTS
        if known:
            assert a.status == "flagged", f"{name} {a.key} now agrees: update KNOWN_DISAGREEMENTS"
            assert a.flag.startswith("flagged: ")
        else:
            assert a.status == "pass", f"{name} {a.key}: {a.detail}"
    definition = spec.TRANSFORM_BY_NAME[name]
    checks = {a.check for a in results if (name, a.key) not in spec.KNOWN_DISAGREEMENTS}
    if definition.deterministic:
        assert "reference" in checks and ("compare" in checks or len(results) == 1)
    else:
        assert checks == {"shape"}


@pytest.mark.parametrize("name", [p.name for p in PIPELINES])
def test_pipeline_agreement(name: str) -> None:
    results = verify.check_pipeline(name)
    keys = {a.key for a in results}
    assert {"kornia/tensor@batch", "torchvision/v2-tensor@batch"} <= keys
    for a in results:
        known = (name, a.key) in spec.KNOWN_DISAGREEMENTS
        assert a.status == ("flagged" if known else "pass"), f"{name} {a.key}: {a.detail}"


def test_a_wrong_implementation_is_flagged() -> None:
    """The checker itself: a 1-pixel shift and a wrong dtype are caught, not passed."""
    import numpy as np

    from imgbench.augment.base import Op

    photo = verify.photos()[1][1]
    ref = photo.astype(np.float64)
    shifted = np.roll(ref, 1, axis=1)
    result = verify._compare("hflip", "x/y", "ref", [shifted], [ref], spec.EXACT)
    assert result.status == "flagged" and "max abs diff" in result.detail
    op = Op(lambda x: x, "hwc-uint8", "u8", "hwc")
    bad = photo.astype(np.float32)
    checked = verify._shape_check("hflip", "x/y", op, [bad], [ref], [photo.shape])
    assert checked.status == "flagged" and "dtype float32" in checked.detail
