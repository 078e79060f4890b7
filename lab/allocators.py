"""Pillow's decode of large photos under each allocator: imgbench's worker rows beside a plain loop.

    .venv/bin/python lab/allocators.py --sessions 2 --out /tmp/imgbench-allocators

Builds (once) a folder of 12 photo-like 2000x1500 JPEGs, then for each allocator setting measures
the Pillow memory-decode case through the engine (``imgbench.measure.manager.Manager``: the
worker server under that allocator, the quick profile's settings), ``--sessions`` times, each
with a fresh manager and so a fresh worker server, and a plain loop of the same calls
(``np.asarray(Image.open(BytesIO(data)))``: the reader's policy for an RGB JPEG, which
``convert("RGB")`` would copy once more; one thread) in a fresh process with the same
environment and address layout (the profile's: ``imgbench.measure.layout``), once before each
session. Prints images/s, the sessions' coefficient of variation, minor page faults per image,
the ratio of the medians, and the median of the paired ratios (each loop, then its session: the
host's drift between sessions cancels).

The worker imports only the case's modules (``worker_imports="selected"``), as the loop does:
the suite's default, every module the profile's cases need, puts torch, OpenCV and the rest in
the heap before the first decode, which is another process history than the loop's (the glibc
row's sessions scattered 4.5% and 14.9% with it, 0.7% without: docs/measuring.md).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from imgbench.controls import resolve
from imgbench.measure.allocator import (
    ALLOCATORS,
    AllocatorUnavailableError,
    allocator,
    environment_for,
)
from imgbench.measure.manager import Manager
from imgbench.measure.rounds import Measurement
from imgbench.profiles import ProfileChoice, get_profile
from imgbench.stages import planner, session_cases

ROOT = Path(__file__).resolve().parents[1]
LOOP = """
import io, sys, time
from imgbench.measure.layout import run_under
run_under(sys.argv[2])  # the worker server's layout: the same settings, not only the allocator
from pathlib import Path
import numpy as np
from PIL import Image
data = [p.read_bytes() for p in sorted(Path(sys.argv[1]).rglob("*.jpg"))]
def once():
    for d in data:
        with Image.open(io.BytesIO(d)) as im:
            assert im.mode == "RGB", im.mode  # so np.asarray is the reader's whole policy
            np.asarray(im)
once()
best = []
for _ in range(10):
    start = time.perf_counter(); once(); best.append(time.perf_counter() - start)
print(len(data) / float(np.median(best)))
"""


def photos(folder: Path) -> Path:
    if not folder.is_dir():
        subprocess.check_call(
            [
                str(Path(sys.executable).with_name("imgbench")),
                "dataset",
                "synth",
                "--out",
                str(folder),
                "--n",
                "12",
                "--size",
                "2000x1500",
                "--classes",
                "1",
            ]
        )
    return folder


def measure_once(data: Path, name: str) -> Measurement:
    """The Pillow JPEG memory-decode case in a worker of a fresh manager under ``name``."""
    choice = ProfileChoice("quick")
    settings = resolve(
        choice.resolve(),
        # the worker imports what the loop imports (docstring); the gate off: a session's
        # figure, as the loop's, is what the host gave it
        {"allocator": name, "worker_imports": "selected", "process_model": "worker"},
    )
    case = next(
        c
        for c in session_cases("read", choice, settings)
        if c.library == "pillow" and c.variant == "open-convert" and c.params["codec"] == "jpeg"
    )
    manager = Manager(settings, planner(choice), str(data))
    try:
        outcome = manager.measure(case)
    finally:
        manager.close()
    if not isinstance(outcome, Measurement):
        raise SystemExit(f"{name}: {outcome}")
    return outcome


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path("/tmp/imgbench-allocators"))
    parser.add_argument("--allocators", nargs="+", choices=ALLOCATORS, default=list(ALLOCATORS))
    args = parser.parse_args()
    data = photos(args.out / "photos")
    layout = resolve(get_profile("quick"), environ={}).address_layout
    print(
        f"{'allocator':12} {'imgbench images/s (sessions)':34} {'faults/img':>10}   plain loop, per session"
    )
    for name in args.allocators:
        try:
            env = environment_for(dict(os.environ), allocator(name))
        except AllocatorUnavailableError as exc:
            print(f"{name:12} unavailable: {exc}")
            continue
        figures, faults, plain = [], [], []
        for _ in range(args.sessions):
            # the plain loop once per session, alternating with them: both see the same host hours
            loop = subprocess.check_output(
                [sys.executable, "-c", LOOP, str(data), layout], env=env, text=True
            )
            plain.append(float(loop))
            measured = measure_once(data, name)
            assert measured.allocator == name, measured.allocator
            assert measured.address_layout == layout, measured.address_layout
            figures.append(measured.metrics()["images_per_s_median"])
            faults.append(measured.page_faults_minor_per_image or 0.0)
        cv = float(np.std(figures, ddof=1) / np.mean(figures)) if len(figures) > 1 else 0.0
        shown = ", ".join(f"{f:.1f}" for f in figures)
        loops = ", ".join(f"{f:.1f}" for f in plain)
        ratio = float(np.median(figures) / np.median(plain))
        # each loop ran just before its session: the host's drift between sessions cancels
        paired = float(np.median(np.asarray(figures) / np.asarray(plain)))
        print(
            f"{name:12} {shown:24} (CV {cv:.1%}) {np.mean(faults):10.0f}   {loops}"
            f"  (imgbench / loop medians {ratio:.3f}, median of paired ratios {paired:.3f})"
        )


if __name__ == "__main__":
    main()
