"""How much a case's figure moves between identical sessions, and alone vs inside the suite.

    .venv/bin/python scripts/stability.py --sessions 8 --profile quick --out /tmp/stability

runs the same pytest-benchmark session N times (one after another, never two at once), then prints
per case the coefficient of variation of images/s across sessions (median and 95th percentile over
cases), and, with --alone, runs one case of each stage by itself N/2 times and compares its median
with the same case's median inside the whole suite. Figures go to docs/measuring.md.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import numpy as np
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=8)
    parser.add_argument("--profile", default="quick")
    parser.add_argument("--dataset", default=None)
    parser.add_argument("--out", type=Path, default=Path("/tmp/imgbench-stability"))
    parser.add_argument("--alone", action="store_true", help="also one case per stage, alone")
    parser.add_argument("pytest_args", nargs="*", help="more pytest arguments, after --")
    args = parser.parse_args()
    suite = [
        session(args.out / "suite", args.profile, args.dataset, args.pytest_args)
        for _ in range(args.sessions)
    ]
    table = medians(suite)
    cv = table.std(axis=1, ddof=1) / table.mean(axis=1)
    print(f"{len(table)} cases x {args.sessions} sessions ({args.profile}): CV of images/s")
    print(f"  median {cv.median():.2%}  p95 {cv.quantile(0.95):.2%}  max {cv.max():.2%}")
    for case, value in cv.sort_values(ascending=False).head(8).items():
        print(f"  {value:6.2%}  {case}")
    if not args.alone:
        return
    chosen = [table.index[table.index.str.startswith(f"{stage}/")][0] for stage in
              ("read", "augment", "format", "loader") if table.index.str.startswith(f"{stage}/").any()]  # fmt: skip
    print("alone vs in the suite (median of session medians):")
    node_ids = pd.read_parquet(suite[0]).set_index("case_id")["test_id"]
    for case in chosen:
        runs = []
        for _ in range(max(2, args.sessions // 2)):
            path = session(args.out / "alone", args.profile, args.dataset, args.pytest_args,
                           target=node_ids[case])  # fmt: skip
            rows = pd.read_parquet(path).set_index("case_id")
            runs.append(rows.loc[case, "images_per_s_median"])
        alone = float(np.median(runs))
        inside = float(table.loc[case].median())
        print(f"  {alone / inside - 1:+.1%}  alone {alone:,.0f}  suite {inside:,.0f}  {case}")


if __name__ == "__main__":
    main()
