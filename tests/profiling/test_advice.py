"""The decode advice's reader comparison on a user's own files: every full-decode JPEG reader of
the main environment that matches the reference decode is timed, and the line names the fastest
against the one the pipeline uses (the CLI tests run `imgbench profile --no-readers`)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from imgbench.profiling.advice import decode_line, reader_speeds
from tests.conftest import write_photo_like


def test_the_readers_are_timed_on_the_users_files_and_the_line_names_the_fastest(
    tmp_path: Path,
) -> None:
    files = [tmp_path / f"photo_{i}.jpg" for i in range(2)]
    for i, path in enumerate(files):
        write_photo_like(path, (160, 120), seed=i)
    speeds = reader_speeds(files, rounds=1)
    assert "pillow/open-convert" in speeds and "opencv/imdecode-rgb" in speeds, speeds
    assert all(rate > 0 for rate in speeds.values()), speeds

    dataset = SimpleNamespace(samples=[(str(path), 0) for path in files])
    line = decode_line({"cv2": 3}, dataset, {"decode": 0.6}, compare=True)
    assert line.startswith("decode takes 60% of the sampled time (cv2). On 2 of your files, ")
    fastest = line.split("of your files, ", 1)[1].split(" decodes ", 1)[0]
    assert fastest in speeds, line
    assert "for opencv/imdecode-rgb" in line and "verified against the reference decode" in line
