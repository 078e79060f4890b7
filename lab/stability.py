"""How much a case's figure moves between identical sessions, and alone vs inside the suite.

    .venv/bin/python lab/stability.py --sessions 8 --profile quick --out /tmp/stability

runs the same pytest-benchmark session N times (one after another, never two at once), then prints
per case the coefficient of variation of images/s across sessions (median and 95th percentile over
cases), and, with --alone, runs one case of each stage by itself right after each suite session
and compares the two: the median over sessions of (alone / inside the suite) - 1. Runs are
logged in lab/journal.md on the results branch; docs/measuring.md quotes the figures its
choices rest on.

Why paired: the host drifts over minutes. Run one after another, the same Pillow case read 909,
957 (two contexts) and a minute later 1,263 and 1,273 (the same two); with every alone session
after all the suite sessions, the comparison measured the time between them, not the context.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]


def session(
    out: Path, profile: str, dataset: str | None, extra: list[str], target: str = "benches"
) -> Path:
    """One pytest session of ``target`` (the benches, or one case's node id); its parquet file."""
    out.mkdir(parents=True, exist_ok=True)
    before = set(out.glob("*.parquet"))
    args = [sys.executable, "-m", "pytest", target, "-q", "-p", "no:cacheprovider"]
    args += [f"--imgbench-profile={profile}", f"--imgbench-results={out}", *extra]
    if dataset:
        args.append(f"--dataset={dataset}")
    code = subprocess.call(args, cwd=ROOT, stdout=subprocess.DEVNULL)
    if code not in (0, 1):
        raise SystemExit(f"pytest exited {code}")
    (new,) = set(out.glob("*.parquet")) - before
    return new


def medians(paths: list[Path]) -> pd.DataFrame:
    frames = []
    for i, path in enumerate(paths):
        rows = pd.read_parquet(path)
        rows = rows[rows["status"] == "ok"].set_index("case_id")["images_per_s_median"]
        frames.append(rows.rename(i))
    return pd.concat(frames, axis=1)


def host_ratio(path: Path) -> float:
    """The median over a session's ok cases of each case's median host-probe ratio."""
    rows = pd.read_parquet(path)
    ratios = rows.loc[rows["status"] == "ok", "host_ratios"].dropna()
    medians = [statistics.median(r) for r in ratios if len(r)]
    return statistics.median(medians) if medians else float("nan")


def paired(alone: pd.DataFrame, inside: pd.DataFrame) -> pd.DataFrame:
    """Per case: the median over sessions of alone / inside - 1 (each alone session ran right
    after its suite session), and the two medians. Rows: cases; columns: sessions."""
    ratio = (alone / inside.loc[alone.index, alone.columns]).median(axis=1) - 1
    return pd.DataFrame(
        {
            "paired_change": ratio,
            "alone": alone.median(axis=1),
            "suite": inside.loc[alone.index].median(axis=1),
        }
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=8)
    parser.add_argument("--profile", default="quick")
    parser.add_argument("--dataset", default=None)
    parser.add_argument("--out", type=Path, default=Path("/tmp/imgbench-stability"))
    parser.add_argument("--alone", action="store_true", help="also one case per stage, alone")
    parser.add_argument("pytest_args", nargs="*", help="more pytest arguments, after --")
    args = parser.parse_args()
    suite: list[Path] = []
    alone: dict[str, dict[int, float]] = {}
    node_ids: dict[str, str] = {}  # the cases run alone, from the first suite session
    print("how quiet: per suite session, its start (UTC), length, load average before it, and the")
    print(
        "median over cases of the host probe's ratio to the session's fastest (1.0 = undisturbed)"
    )
    for i in range(args.sessions):
        started, load = time.time(), os.getloadavg()[0]
        suite.append(session(args.out / "suite", args.profile, args.dataset, args.pytest_args))
        print(f"  session {i + 1}: {time.strftime('%H:%M:%S', time.gmtime(started))} "
              f"{time.time() - started:.0f} s  load {load:.2f}  "
              f"host ratio {host_ratio(suite[-1]):.2f}", flush=True)  # fmt: skip
        if not args.alone:
            continue
        if not node_ids:
            rows = pd.read_parquet(suite[0])
            rows = rows[rows["status"] == "ok"].set_index("case_id")
            node_ids = {case: rows.loc[case, "test_id"] for case in chosen_cases(rows.index)}
        for case, node_id in node_ids.items():
            path = session(args.out / "alone", args.profile, args.dataset, args.pytest_args,
                           target=node_id)  # fmt: skip
            one = pd.read_parquet(path).set_index("case_id")
            alone.setdefault(case, {})[i] = float(one.loc[case, "images_per_s_median"])
    table = medians(suite)
    cv = table.std(axis=1, ddof=1) / table.mean(axis=1)
    print(f"{len(table)} cases x {args.sessions} sessions ({args.profile}): CV of images/s")
    print(f"  median {cv.median():.2%}  p95 {cv.quantile(0.95):.2%}  max {cv.max():.2%}")
    for case, value in cv.sort_values(ascending=False).head(8).items():
        print(f"  {value:6.2%}  {case}")
    if not alone:
        return
    print("alone vs in the suite (each alone session right after a suite session):")
    result = paired(pd.DataFrame(alone).T, table)
    for case, row in result.iterrows():
        print(f"  {row.paired_change:+.1%}  alone {row.alone:,.0f}  suite {row.suite:,.0f}  {case}")


def chosen_cases(cases: pd.Index) -> list[str]:
    """The first case of each stage, in the suite's order, and the format stage's first read:
    its first case is a write, and 80% of a small write here is the disk's flush, whose scatter
    (pairs -27% to +10%) says nothing about alone vs inside the suite."""
    chosen = []
    for stage in ("read", "augment", "format", "loader"):
        of_stage = cases[cases.str.startswith(f"{stage}/")]
        if len(of_stage):
            chosen.append(str(of_stage[0]))
        if stage == "format":
            reads = of_stage[of_stage.str.contains("mode=read")]
            if len(reads) and str(reads[0]) not in chosen:
                chosen.append(str(reads[0]))
    return chosen


if __name__ == "__main__":
    main()
