"""The native ceiling: tjbench's own timing, parsed, on real JPEGs."""

from __future__ import annotations

import pytest

from imgbench.readers.libs.tjbench import (
    TjbenchError,
    decode_seconds,
    parse_seconds_per_image,
    tjbench_path,
)
from tests.readers.images import photo_bytes

# Verbatim output of libjpeg-turbo 2.1.5's tjbench (Debian 12) on a 600x400 JPEG.
VERBOSE = """
Warmup time = 0.0 seconds

>>>>>  JPEG 4:2:0 --> RGB (Top-down)  <<<<<

Image size: 600 x 400
Decompress    --> Frame rate:         1111.462076 fps
                  Throughput:         266.750898 Megapixels/sec
"""


def test_parse_frame_rate() -> None:
    assert parse_seconds_per_image(VERBOSE) == pytest.approx(1 / 1111.462076)
    with pytest.raises(ValueError, match="Frame rate"):
        parse_seconds_per_image("nothing useful")


needs_tjbench = pytest.mark.skipif(
    tjbench_path() is None, reason="tjbench not installed (apt-get install libjpeg-turbo-progs)"
)


@needs_tjbench
def test_decode_seconds_on_a_real_photo(tmp_path) -> None:
    path = tmp_path / "coffee.jpg"
    path.write_bytes(photo_bytes("coffee", "jpeg"))
    full = decode_seconds(str(path), benchtime=0.01)
    quarter = decode_seconds(str(path), reduce=4, benchtime=0.01)
    assert 0 < full < 1 and 0 < quarter < 1


@needs_tjbench
@pytest.mark.parametrize("content", [b"", b"not a jpeg"], ids=["zero-byte", "garbage"])
def test_bad_files_are_errors_naming_the_file(tmp_path, content: bytes) -> None:
    path = tmp_path / "bad.jpg"
    path.write_bytes(content)
    with pytest.raises(TjbenchError, match=r"tjbench on .*bad\.jpg"):
        decode_seconds(str(path), benchtime=0.01)


@needs_tjbench
def test_truncated_jpeg_is_an_error(tmp_path) -> None:
    data = photo_bytes("coffee", "jpeg")
    path = tmp_path / "cut.jpg"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(TjbenchError, match="Premature end"):
        decode_seconds(str(path), benchtime=0.01)
