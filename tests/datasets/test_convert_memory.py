"""`imgbench dataset convert` at flat memory: N and 10xN tiny images, peak RSS of the child.

One test per format family (key-value store, columnar file, tar shards with an index, packed
arrays with offsets). Each converts N and 10xN 64x64 JPEGs and compares the converting process's
peak RSS (VmHWM). Before the manifest was streamed (a list of every entry, a dict by path, the
scan's results and the writers' label/index lists) 1,100 -> 11,000 images grew it by 21-42 MiB;
now by 4-11. Each conversion runs in a fork of one interpreter per format that has only imported
the format's modules (nothing converted yet: what a fresh process holds, without a second start
and, for tar, a second `import torch`; the growths measured the same: lmdb +7.4-7.7, tar
+11.8-11.9, parquet +3.8-4.3, npy-packed +5.7-5.8 MiB against +6.4-8.5, +11.3, +3.6, +5.5 from
two fresh processes), and converts a small warm-up set first: webdataset imports torch, whose
RSS still settled while 1,100 images were converted (tar grew 15.0-15.1 MiB without it).
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
    import importlib, json, os, sys, traceback
    from pathlib import Path
    from imgbench.formats.convert import convert
    from imgbench.formats.registry import get_format

    def peak_mib():
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024

    def measured(spec, src, out, warm_up):
        \"\"\"Convert ``src`` in a fork of this process (which has converted nothing): its
        peak RSS, from the fork's own high-water mark.\"\"\"
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read)
            code = 1
            try:
                # a warm-up conversion first: the libraries the writer imports (webdataset
                # imports torch, whose RSS settles over ~2 s) are not what grows with the count
                convert(warm_up, spec, out / "warm-up", workers=2, progress=False)
                report = convert(src, spec, out / "out", workers=2, progress=False)
                found = {"records": report.records, "skipped": len(report.left_out),
                         "peak_mib": peak_mib()}
                os.write(write, json.dumps(found).encode())
                code = 0
            except BaseException:
                traceback.print_exc()  # os._exit below would drop it
            finally:
                os._exit(code)
        os.close(write)
        with os.fdopen(read) as pipe:
            text = pipe.read()
        _, status = os.waitpid(pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            sys.exit(f"the conversion of {src} ended with status {status}")
        return json.loads(text)

    if __name__ == "__main__":
        name, small, large, out, warm_up = sys.argv[1:]
        spec = get_format(name)
        importlib.import_module(spec.module)
        for module in spec.requires:
            importlib.import_module(module)
        found = {key: measured(spec, Path(src), Path(out) / key, Path(warm_up))
                 for key, src in (("small", small), ("large", large))}
        print(json.dumps(found))
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


def peaks(name: str, small: Path, large: Path, warm_up: Path, out: Path) -> dict:
    env = {"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, name, str(small), str(large), str(out), str(warm_up)],
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
    found = peaks(name, sources[N], sources[10 * N], sources[WARM_UP], tmp_path)
    small, large = found["small"], found["large"]
    assert (small["records"], large["records"]) == (N, 10 * N)
    assert small["skipped"] == large["skipped"] == 1
    growth = large["peak_mib"] - small["peak_mib"]
    assert growth < GROWTH_LIMIT_MIB, (
        f"{name}: peak RSS {small['peak_mib']:.0f} MiB at {N:,} images, "
        f"{large['peak_mib']:.0f} MiB at {10 * N:,} (+{growth:.1f} MiB)"
    )
