"""Pillow's decode in forked children, by what their parent imported: the state a worker inherits.

    .venv/bin/python lab/fork_states.py --folder datasets/.cache/synthetic-small-* \
        --imports "" torch "pyarrow.parquet lmdb" "torch pyarrow.parquet lmdb"

For each import set, a fresh parent (fixed address layout, as imgbench's worker server) imports
the modules, optionally settles glibc's thresholds (``imgbench.measure.allocator.settle_glibc``),
then forks two children that decode the folder's first 16 JPEGs with Pillow (5 untimed passes,
10 timed rounds of 4 passes) and print images/s, minor page faults per image and where the
decoded array landed. The same child code runs in every parent: any difference is the state the
parent left (its allocator thresholds, its heap layout), which is what a worker inherits.
"""

from __future__ import annotations

import argparse
import io
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

CHILD_ROUNDS = 10
PASSES_PER_ROUND = 4


def _decode(data: bytes) -> object:
    import numpy as np
    from PIL import Image

    with Image.open(io.BytesIO(data)) as image:
        return np.asarray(image if image.mode == "RGB" else image.convert("RGB"))


def _child(datas: list[bytes]) -> None:
    for _ in range(5):
        for data in datas:
            _decode(data)
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    rates = []
    for _ in range(CHILD_ROUNDS):
        start = time.perf_counter()
        for _ in range(PASSES_PER_ROUND):
            for data in datas:
                _decode(data)
        rates.append(PASSES_PER_ROUND * len(datas) / (time.perf_counter() - start))
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
    array = _decode(datas[0])
    address = array.ctypes.data  # type: ignore[attr-defined]
    images = CHILD_ROUNDS * PASSES_PER_ROUND * len(datas)
    print(
        f"  {statistics.median(rates):6.0f} img/s  {faults / images:7.2f} faults/img  "
        f"array at {address:#x} ({address % 4096} mod 4096)",
        flush=True,
    )
    os._exit(0)


def parent(folder: str, modules: list[str], settle: bool) -> None:
    """Runs in the fresh parent: import, settle, fork two children."""
    import importlib

    for module in modules:
        importlib.import_module(module)
    files = sorted(Path(folder).rglob("*.jpg"))[:16]
    if not files:
        raise SystemExit(f"{folder}: no .jpg files")
    datas = [f.read_bytes() for f in files]
    if settle:
        from imgbench.measure.allocator import settle_glibc

        settle_glibc()
    for _ in range(2):
        pid = os.fork()
        if pid == 0:
            _child(datas)
        os.waitpid(pid, 0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folder", required=True, help="a folder of JPEGs (searched recursively)")
    parser.add_argument("--imports", nargs="+", default=["", "torch"], help="import sets")
    parser.add_argument("--parent", nargs="*", help=argparse.SUPPRESS)
    parser.add_argument("--settle", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.parent is not None:
        parent(args.folder, args.parent, args.settle)
        return
    for settle in (False, True):
        print("settled thresholds" if settle else "thresholds as the imports left them")
        for imports in args.imports:
            print(f" imports: {imports or '(none)'}", flush=True)
            command = ["setarch", "-R", sys.executable, __file__, "--folder", args.folder]
            command += [*(["--settle"] if settle else []), "--parent", *imports.split()]
            subprocess.run(command, check=True)


if __name__ == "__main__":
    main()
