"""How often the answer repeats: N runs of a profile's loader stage, one after another, and
whether each run's pick is the same configuration, or its equivalent set contains it.

    .venv/bin/python lab/repeatability.py --runs 5 --profile default --out /tmp/repeat

runs `imgbench run --profile P --env main --name repeat-I -- -k EXPR` N times (never two at once;
each ends with its head-to-head final), then prints each run's pick, its figure and interval,
its equivalent set, and the agreement: the most frequent pick P, and in how many runs the pick is
P or P is in the run's equivalent set. docs/final.md quotes the figure; lab/journal.md logs runs.
"""

from __future__ import annotations

import argparse
import collections
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
    """The most frequent pick, and in how many runs the pick is it or the set contains it."""
    modal, _ = collections.Counter(p.case_id for p in picks).most_common(1)[0]
    agree = sum(p.case_id == modal or modal in p.equivalent for p in picks)
    return modal, agree


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--profile", default="default")
    parser.add_argument("--dataset", default=None)
    parser.add_argument("-k", dest="keyword", default="loader", help="pytest -k selection")
    parser.add_argument("--out", type=Path, default=Path("/tmp/imgbench-repeatability"))
    args = parser.parse_args()
    picks: list[RunPick] = []
    for index in range(1, args.runs + 1):
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
    print(f"\nthe most frequent pick: {modal}")
    print(f"runs whose pick is it, or whose equivalent set contains it: {agree} of {len(picks)}")
    for p in picks:
        same = "same" if p.case_id == modal else ("in set" if modal in p.equivalent else "OTHER")
        print(f"  {p.run}: {same}: {p.pick} ({p.images_per_s:,.0f}, set of {len(p.equivalent)})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
