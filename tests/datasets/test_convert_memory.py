"""`imgbench dataset convert` at flat memory: N and 10xN tiny images, peak RSS of the child.

One test per format family (key-value store, columnar file, tar shards with an index, packed
arrays with offsets). Each converts N and 10xN 64x64 JPEGs in a fresh process and compares the
process's peak RSS (VmHWM). Before the manifest was streamed (a list of every entry, a dict by
path, the scan's results and the writers' label/index lists) 1,100 -> 11,000 images grew it by
21-42 MiB; now by 4-11. Each child converts a small warm-up set first: webdataset imports torch,
whose RSS still settled while 1,100 images were converted (tar grew 15.0-15.1 MiB without it).
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from imgbench.datasets.scan import scan_to_file
from imgbench.formats.registry import get_format

SRC = Path(__file__).resolve().parents[2] / "src"
N = 1100  # more than one batch of the scan and of the streamed manifest (1,024 rows)
# allowed growth of the peak, N -> 10xN. Measured under load: before the fixes +21 to +42 MiB,
# after +4 to +11 (part of it a plateau that 1,100 images do not reach yet: 10k -> 100k grew 1-11 MiB).
# With the warm-up (2026-11-23): lmdb +10.7 (LMDB's mapped pages count in RSS), parquet +4.0, tar +11.8,
# npy-packed +6.1; at 22,000 images +15.7 / +5.0 / +11.6 / +8.6
GROWTH_LIMIT_MIB = 16
WARM_UP = 64  # images converted first in each child, so library imports settle before the peak

CHILD = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    from imgbench.datasets.convert import convert
    from imgbench.formats.registry import get_format

    def peak_mib():
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024

    if __name__ == "__main__":
        spec = get_format(sys.argv[1])
        # a warm-up conversion first: the libraries the writer imports (webdataset imports torch,
        # whose RSS settles over ~2 s) are not what grows with the image count
        convert(Path(sys.argv[4]), spec, Path(sys.argv[3]) / "warm-up", workers=2, progress=False)
        report = convert(Path(sys.argv[2]), spec, Path(sys.argv[3]) / "out", workers=2,
                         progress=False)
        print(json.dumps({"records": report.records, "skipped": len(report.left_out),
                          "peak_mib": peak_mib()}))
    """
)


def tiny_jpegs(root: Path, n: int, classes: int = 10) -> Path:
    """``n`` distinct 64x64 JPEGs in ``classes`` folders (one encode; an index in a COM segment)
    and one truncated file, which every conversion must skip."""
    rng = np.random.default_rng(0)
    buffer = io.BytesIO()
    Image.fromarray(rng.integers(0, 256, (64, 64, 3), dtype=np.uint8)).save(buffer, "JPEG")
    jpeg = buffer.getvalue()
    for c in range(classes):
        (root / f"class_{c:03d}").mkdir(parents=True, exist_ok=True)
    for i in range(n):
        tag = b"imgbench %08d" % i
        comment = b"\xff\xfe" + (len(tag) + 2).to_bytes(2, "big") + tag
        path = root / f"class_{i % classes:03d}" / f"{i:08d}.jpg"
        path.write_bytes(jpeg[:2] + comment + jpeg[2:])
    (root / "class_000" / "truncated.jpg").write_bytes(jpeg[: len(jpeg) // 2])
    return root


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Path]:
    """N and 10xN images and a warm-up set, scanned once (conversions read the cached manifest)."""
    base = tmp_path_factory.mktemp("memory")
    out = {}
    for n in (WARM_UP, N, 10 * N):
        root = tiny_jpegs(base / f"n{n}", n)
        scan_to_file(root, workers=2).close()
        out[n] = root
    return out


def peak(name: str, src: Path, warm_up: Path, out: Path) -> dict:
    env = {"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, name, str(src), str(out), str(warm_up)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("name", ["lmdb", "parquet", "tar", "npy-packed"])
def test_conversion_peak_rss_is_flat_in_the_image_count(
    name: str, sources: dict[int, Path], tmp_path: Path
) -> None:
    if get_format(name).unmet_requirement():
        pytest.skip(f"{name} is not installed")
    small = peak(name, sources[N], sources[WARM_UP], tmp_path / "small")
    large = peak(name, sources[10 * N], sources[WARM_UP], tmp_path / "large")
    assert (small["records"], large["records"]) == (N, 10 * N)
    assert small["skipped"] == large["skipped"] == 1
    growth = large["peak_mib"] - small["peak_mib"]
    assert growth < GROWTH_LIMIT_MIB, (
        f"{name}: peak RSS {small['peak_mib']:.0f} MiB at {N:,} images, "
        f"{large['peak_mib']:.0f} MiB at {10 * N:,} (+{growth:.1f} MiB)"
    )
