"""spdl.io (FFmpeg's decoders) as a reader: verified against the reference decode like every
reader, damaged files are errors that say so, and the row records which FFmpeg decoded."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from imgbench.readers.libs.spdl import SpdlDecodeError, ffmpeg_problem
from imgbench.readers.registry import build_reader, find_spec
from imgbench.readers.verify import reference_decode, tolerance, verify_item
from tests.readers.images import PHOTOS, photo_bytes

pytest.importorskip("spdl.io")
FFMPEG = ffmpeg_problem()
pytestmark = pytest.mark.skipif(FFMPEG is not None, reason=str(FFMPEG))

SPEC = find_spec("spdl", "load-image")


@pytest.fixture(scope="module")
def reader():  # type: ignore[no-untyped-def]
    return build_reader(SPEC)


@pytest.mark.parametrize("codec", ["jpeg", "png", "webp"])
def test_photos_pass_verification(reader, codec: str) -> None:  # type: ignore[no-untyped-def]
    for name in PHOTOS:
        data = photo_bytes(name, codec)
        verdict = verify_item(
            reader.decode, data, path=name, data=data, key=f"{name}.{codec}", codec=codec
        )
        assert verdict.ok, f"{name}.{codec}: {verdict.detail}"
        if codec == "jpeg":  # FFmpeg's mjpeg + swscale, not libjpeg-turbo: about one level off
            assert verdict.mae is not None and 0 < verdict.mae < tolerance("jpeg", "full")


def test_read_path_is_spdl_own_file_open(reader, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    data = photo_bytes("chelsea", "jpeg")
    path = tmp_path / "chelsea.jpg"
    path.write_bytes(data)
    np.testing.assert_array_equal(reader.read(str(path)), reader.decode(data))
    assert reader.read(str(path)).shape == reference_decode(data).shape


def test_damaged_files_are_errors_that_say_so(reader) -> None:  # type: ignore[no-untyped-def]
    data = photo_bytes("coffee", "jpeg")
    # FFmpeg would conceal the missing half (grey rows); the adapter asks it to stop instead
    with pytest.raises(SpdlDecodeError, match="truncated or corrupt"):
        reader.decode(data[: len(data) // 2])
    with pytest.raises(SpdlDecodeError, match="Invalid data found"):
        reader.decode(b"")
    # a PNG under any name: FFmpeg probes the content, as the dataset scan does
    png = photo_bytes("coffee", "png")
    np.testing.assert_array_equal(reader.decode(png), reference_decode(png))


def test_row_records_the_ffmpeg_that_decoded(reader) -> None:  # type: ignore[no-untyped-def]
    assert reader.extra["ffmpeg"]["libavcodec"].count(".") == 2
    assert reader.extra["decoder_options"] == {"err_detect": "explode"}
    assert "rgb24" in reader.extra["filter_desc"]
