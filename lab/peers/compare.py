"""Each system's as-documented row against a plain script written from its own example, and
against its same-recipe row, timed alternately on the same folder.

    .venv/bin/python lab/peers/compare.py --pairs 3 [--systems DALI SPDL ...] [--dataset D]
    PYTHONPATH=src .venvs/tensorflow/bin/python lab/peers/compare.py --systems tf.data

For each system whose cases run in this interpreter's environment, ``--pairs`` times, one at a
time: imgbench's as-documented row (``Manager.measure``, the profile's settings, imgbench's pool
of the dataset), the peer script (``lab/peers/<script>.py``, a fresh process of this
interpreter, over the dataset's whole folder, no imgbench import), imgbench's same-recipe row
at the same threads; then the DataLoader's same-recipe row at 2 workers (the base SPDL's and
torchdata.nodes' published ratios use). Prints the medians and the median paired ratio
(as-documented / peer: each pair measured back to back, so the host's drift cancels).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from imgbench.controls import resolve
from imgbench.library import wrong_environment
from imgbench.measure.case import Case
from imgbench.measure.manager import Manager
from imgbench.measure.rounds import Measurement
from imgbench.measure.settings import parse_assignments
from imgbench.profiles import ProfileChoice
from imgbench.stages import planner, session_cases

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Peer:
    system: str
    library: str
    script: str
    select: dict[str, object]  # parameters that pick the rows (beside workers)
    args: tuple[str, ...] = ()
    workers: int | None = None  # the rows' workers, where not --threads (tf.data: AUTOTUNE, 0)


PEERS = (
    Peer("DALI", "dali", "dali_resnet50.py", {"dali_source": "reader-file", "dali_device": "cpu"}),
    Peer("SPDL", "spdl", "spdl_imagenet.py", {"decoder": "opencv/imdecode-rgb"}),
    Peer("torchdata.nodes", "torchdata-nodes", "torchdata_imagenet.py", {"method": "thread"}),
    Peer(
        "torchdata.nodes processes",
        "torchdata-nodes",
        "torchdata_imagenet.py",
        {"method": "process"},
        ("--method", "process"),
    ),
    Peer("tf.data", "tf-data", "tf_resnet.py", {"format": "files"}, workers=0),
)


def rows(cases: list[Case], peer: Peer, workers: int) -> tuple[Case | None, Case | None]:
    """(as-documented, same-recipe) rows of ``peer`` at ``workers``, without AU or storage."""
    found: dict[bool, Case] = {}
    for case in cases:
        p = case.params
        if case.library != peer.library or p.get("workers") != workers:
            continue
        if "accelerator_images_per_s" in p or any(p.get(k) != v for k, v in peer.select.items()):
            continue
        if p.get("format", "files") != "files":
            continue
        found.setdefault(p.get("configured_as") == "as-documented", case)
    return found.get(True), found.get(False)


def pool_folder(entries: list[Any], root: Path, into: Path) -> Path:
    """imgbench's pool of images as a folder (class subfolders of links): the peer script reads
    the same images as the row (the pool is a seeded sample whose sizes differ from the folder's
    mean)."""
    for i, entry in enumerate(entries):
        source = Path(entry.path) if Path(entry.path).is_absolute() else root / entry.path
        target = into / (entry.label or "class_0") / f"{i:05d}{source.suffix}"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.symlink_to(source)
    return into


def run_peer(peer: Peer, root: Path, threads: int, batch: int) -> float:
    command = [sys.executable, str(HERE / peer.script), str(root), "--threads", str(threads)]
    command += ["--batch", str(batch), *peer.args]
    out = subprocess.run(command, capture_output=True, text=True, timeout=900)
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    if not lines:
        raise RuntimeError(f"{peer.script} failed ({out.returncode}): {out.stderr[-1500:]}")
    return statistics.median(json.loads(lines[-1])["images_per_s"])


def measure(manager: Manager, case: Case) -> float:
    outcome = manager.measure(case)
    if not isinstance(outcome, Measurement):
        raise RuntimeError(f"{case.case_id}: {outcome}")
    return float(outcome.metrics()["images_per_s_median"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="default")
    parser.add_argument("--dataset", default=None)
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--systems", nargs="*", default=None)
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE")
    args = parser.parse_args()
    choice = ProfileChoice(args.profile)
    profile = choice.resolve()
    settings = resolve(profile, parse_assignments(args.set))
    cases = session_cases("loader", choice, settings, profile)
    peers = [p for p in PEERS if args.systems is None or p.system in args.systems]
    manager = Manager(settings, planner(choice, profile), args.dataset or profile.dataset)
    reference = next(
        (
            c
            for c in cases
            if c.library == "torch-dataloader"
            and c.variant == "files-opencv-albumentations"
            and c.params.get("workers") == 2
        ),
        None,
    )
    table = []
    try:
        ctx = manager.context()
        entries = ctx.entries()
        pool_mp = statistics.fmean(e.width * e.height for e in entries) / 1e6
        root = pool_folder(entries, ctx.dataset.root, Path(tempfile.mkdtemp(prefix="peers-")))
        print(
            f"dataset {ctx.dataset.root}: imgbench's pool {len(entries)} images, {pool_mp:.3f} "
            f"MP mean, linked into {root} for the peers; cpu {os.cpu_count()} cores; "
            f"pairs {args.pairs}",
            flush=True,
        )
        for peer in peers:
            workers = args.threads if peer.workers is None else peer.workers
            documented, same = rows(cases, peer, workers)
            if documented is None or same is None:
                print(f"{peer.system}: no rows at {args.threads} in this profile", flush=True)
                continue
            if reason := wrong_environment(documented.environment, documented.dist):
                print(f"{peer.system}: {reason}", flush=True)
                continue
            got: dict[str, list[float]] = {"doc": [], "peer": [], "same": [], "dl2": []}
            for pair in range(args.pairs):
                got["doc"].append(measure(manager, documented))
                got["peer"].append(
                    run_peer(peer, root, args.threads, int(documented.params["batch_size"]))
                )
                got["same"].append(measure(manager, same))
                if reference is not None and documented.environment == "main":
                    got["dl2"].append(measure(manager, reference))
                print(
                    f"{peer.system} pair {pair + 1}: "
                    + ", ".join(f"{k} {v[-1]:.1f}" for k, v in got.items() if v),
                    flush=True,
                )
            table.append((peer.system, got))
    finally:
        manager.close()
    print()
    print(
        f"{'system':28} {'same-recipe':>11} {'as-doc':>8} {'peer':>8} {'doc/peer':>9} "
        f"{'doc/same':>9} {'doc/DL2':>8}"
    )
    for system, got in table:
        med = {k: statistics.median(v) for k, v in got.items() if v}
        paired = statistics.median(a / b for a, b in zip(got["doc"], got["peer"], strict=True))
        dl2 = f"{med['doc'] / med['dl2']:8.2f}" if "dl2" in med else f"{'n/a':>8}"
        print(
            f"{system:28} {med['same']:11.1f} {med['doc']:8.1f} {med['peer']:8.1f} "
            f"{paired:9.3f} {med['doc'] / med['same']:9.3f} {dl2}"
        )
        if "dl2" in med:
            print(f"{'':28} DataLoader 2 workers same-recipe: {med['dl2']:.1f}")


if __name__ == "__main__":
    main()
