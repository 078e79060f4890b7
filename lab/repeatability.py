"""How often the answer repeats: N runs of a profile's loader stage, one after another, and
whether each run's pick is the same configuration, or its equivalent set contains it.

    .venv/bin/python lab/repeatability.py --runs 5 --profile default --out /tmp/repeat

runs `imgbench run --profile P --env main --name repeat-I -- -k EXPR` N times (never two at once;
each ends with its head-to-head final), then prints each run's pick, its figure and interval,
its equivalent set, and the agreement: the pick P that the most runs agree on, and in how many
runs the pick is P or P is in the run's equivalent set. docs/final.md quotes the figure;
lab/journal.md on the results branch logs runs.

    .venv/bin/python lab/repeatability.py --refinal --out /tmp/repeat

holds each earlier run's final again with today's code (its matrix rows copied to
OUT/refinal/run-I, the old final left out), one after another, and prints the same summary: a
change to the final's choice of candidates is checked on the same five screens.
"""

from __future__ import annotations

import argparse
import collections
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from imgbench.answer import answers
from imgbench.results.store import load_results

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class RunPick:
    run: str
    pick: str  # the pick's label
    case_id: str
    images_per_s: float
    interval: str
    equivalent: tuple[str, ...]  # case ids of the equivalent set (the pick included)
    from_final: bool
    minutes: float


def pick_of(frame: pd.DataFrame, run: str, minutes: float) -> RunPick | None:
    """The answer of one run's rows (its main session, and its final when it held one)."""
    found = [a for a in answers(frame) if a.best is not None]
    if not found:
        return None
    answer = found[0]
    best = answer.best
    assert best is not None
    return RunPick(
        run=run,
        pick=best.configuration.label(),
        case_id=best.case_id.removeprefix("final::"),
        images_per_s=best.images_per_s,
        interval=best.interval.text() if best.interval is not None else "",
        equivalent=tuple(m.case_id.removeprefix("final::") for m in answer.equivalent),
        from_final=best.case_id.startswith("final::"),
        minutes=minutes,
    )


def agreement(picks: list[RunPick]) -> tuple[str, int]:
    """The pick most runs agree on (it is their pick, or their equivalent set contains it; the
    more frequent pick first among equals), and in how many runs."""
    counts = collections.Counter(p.case_id for p in picks)

    def agree(case_id: str) -> int:
        return sum(p.case_id == case_id or case_id in p.equivalent for p in picks)

    best = max(counts, key=lambda case_id: (agree(case_id), counts[case_id]))
    return best, agree(best)


def refinal(out: Path, profile: str, dataset: str | None) -> list[Path]:
    """Copy each run's matrix rows (no final) to OUT/refinal/run-I and hold its final again."""
    folders: list[Path] = []
    for source in sorted(out.glob("run-*"), key=lambda p: int(p.name.split("-")[1])):
        target = out / "refinal" / source.name
        if target.exists():
            shutil.rmtree(target)
        target.mkdir(parents=True)
        for parquet in source.glob("*.parquet"):
            if "-final-" not in parquet.name:
                shutil.copy2(parquet, target / parquet.name)
        index = source.name.split("-")[1]
        command = [
            sys.executable,
            "-m",
            "imgbench.cli",
            "final",
            "--results",
            str(target),
            "--run",
            f"repeat-{index}",
            "--profile",
            profile,
            *(["--dataset", dataset] if dataset else []),
        ]
        print("$", " ".join(command), flush=True)
        subprocess.call(command, cwd=ROOT)
        folders.append(target)
    return folders


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--profile", default="default")
    parser.add_argument("--dataset", default=None)
    parser.add_argument("-k", dest="keyword", default="loader", help="pytest -k selection")
    parser.add_argument("--out", type=Path, default=Path("/tmp/imgbench-repeatability"))
    parser.add_argument(
        "--refinal", action="store_true", help="hold the finals of the runs in --out again"
    )
    args = parser.parse_args()
    picks: list[RunPick] = []
    if args.refinal:
        for folder in refinal(args.out, args.profile, args.dataset):
            number = folder.name.split("-")[1]
            frame = load_results(folder).frame
            frame = frame[frame["run_name"].fillna("").str.match(rf"^repeat-{number}(-final)?$")]
            found = pick_of(frame, f"repeat-{number}", 0.0)
            if found is not None:
                picks.append(found)
                print(
                    f"run {number}: {found.pick}: {found.interval}; set of {len(found.equivalent)}"
                )
    for index in range(1, 0 if args.refinal else args.runs + 1):
        results = args.out / f"run-{index}"
        results.mkdir(parents=True, exist_ok=True)
        command = [
            sys.executable,
            "-m",
            "imgbench.cli",
            "run",
            "--profile",
            args.profile,
            "--env",
            "main",
            "--name",
            f"repeat-{index}",
            "--results",
            str(results),
            *(["--dataset", args.dataset] if args.dataset else []),
            "-k",
            args.keyword,
        ]
        started = time.perf_counter()
        print("$", " ".join(command), flush=True)
        code = subprocess.call(command, cwd=ROOT)
        minutes = (time.perf_counter() - started) / 60
        if code not in (0, 1):
            print(f"run {index} ended with exit code {code}: stopping", flush=True)
            break
        frame = load_results(results).frame
        frame = frame[frame["run_name"].fillna("").str.match(rf"^repeat-{index}(-final)?$")]
        found = pick_of(frame, f"repeat-{index}", minutes)
        if found is None:
            print(f"run {index}: no answer", flush=True)
            continue
        picks.append(found)
        print(
            f"run {index} ({minutes:.1f} min): {found.pick}: {found.interval} "
            f"({'final' if found.from_final else 'matrix'}); equivalent set "
            f"of {len(found.equivalent)}",
            flush=True,
        )
    if not picks:
        return 1
    modal, agree = agreement(picks)
    print(f"\nthe pick most runs agree on: {modal}")
    print(f"runs whose pick is it, or whose equivalent set contains it: {agree} of {len(picks)}")
    for p in picks:
        same = "same" if p.case_id == modal else ("in set" if modal in p.equivalent else "OTHER")
        print(f"  {p.run}: {same}: {p.pick} ({p.images_per_s:,.0f}, set of {len(p.equivalent)})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
