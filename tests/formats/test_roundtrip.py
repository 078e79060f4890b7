"""Every format, on real photos: each record reads back identical, with its label, both ways."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from imgbench.formats.base import ARRAY_SIZE, fixed_array, open_format
from imgbench.formats.registry import FORMATS
from imgbench.formats.verify import unmet_requirement, verify_format


@pytest.mark.parametrize("spec", FORMATS, ids=[s.name for s in FORMATS])
def test_round_trip_on_real_photos(spec, photo_manifest, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    reason = unmet_requirement(spec)
    if reason:
        pytest.skip(reason)
    result = verify_format(spec, photo_manifest.root, photo_manifest.entries, tmp_path)
    assert result.status == "ok", (result.reason, result.messages)
    assert result.records == len(photo_manifest.entries)
    assert result.size_ratio is not None and result.size_ratio > 0.5
    with open_format(spec, tmp_path / spec.name) as reader:
        payload, label = reader[len(reader) - 1]
        assert isinstance(label, int)
        if spec.stores == "array":
            assert isinstance(payload, np.ndarray)
            assert payload.shape == (ARRAY_SIZE, ARRAY_SIZE, 3) and payload.dtype == np.uint8
        else:
            assert isinstance(payload, bytes)
        with pytest.raises(IndexError):
            reader[len(reader)]


def test_labels_follow_class_folders(photo_manifest, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from imgbench.formats.base import build_format, class_names
    from imgbench.formats.registry import get_format

    report = build_format(
        get_format("sqlite"), photo_manifest.root, photo_manifest.entries, tmp_path / "db"
    )
    classes = class_names(photo_manifest.entries)
    assert report.meta.classes == classes == ("class_0", "class_1", "class_2")
    with open_format(get_format("sqlite"), report.path) as reader:
        labels = [label for _, label in reader]
    assert labels == [classes.index(e.label) for e in photo_manifest.entries]


def test_fixed_array_is_a_centre_crop_of_the_resized_photo(photo_manifest) -> None:  # type: ignore[no-untyped-def]
    entry = max(photo_manifest.entries, key=lambda e: e.width / e.height)
    data = (photo_manifest.root / entry.path).read_bytes()
    array = fixed_array(data, 64)
    assert array.shape == (64, 64, 3) and array.flags.c_contiguous
    assert np.array_equal(array, fixed_array(data, 64))  # deterministic
