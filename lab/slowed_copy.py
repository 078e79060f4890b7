"""A copy of a results file with one case's timed rounds made slower: a known regression to compare.

    .venv/bin/python lab/slowed_copy.py results/RUN.parquet --case 'format/lmdb/*read*' \
        --factor 1.15 --out /tmp/slowed/RUN.parquet
    .venv/bin/imgbench compare results/RUN.parquet /tmp/slowed/RUN.parquet   # exits 1, names it
    .venv/bin/imgbench compare results/RUN.parquet results/RUN.parquet       # exits 0

Every round of the first ok case matching ``--case`` (a glob) takes ``--factor`` times as long, its
latencies too, and its throughput columns are divided by the factor; nothing else changes, so the
copy is the same run with one case slowed by the round scatter it really had (the single-file
check in docs/regression.md).
"""

from __future__ import annotations

import argparse
import fnmatch
from pathlib import Path

import numpy as np
import pandas as pd

THROUGHPUT = ("images_per_s_median", "mb_per_s_median", "megapixels_per_s_median")
LATENCY = ("latency_ms_median", "latency_ms_p90", "latency_ms_p99")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path)
    parser.add_argument("--case", required=True, help="glob on case_id; the first ok match")
    parser.add_argument("--factor", type=float, default=1.15)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    frame = pd.read_parquet(args.results)
    ok = frame[(frame["status"] == "ok") & frame["samples_s"].notna()]
    matches = [c for c in ok["case_id"] if fnmatch.fnmatchcase(str(c), args.case)]
    if not matches:
        raise SystemExit(f"no ok timed case matches {args.case!r} in {args.results}")
    case = matches[0]
    index = frame.index[frame["case_id"] == case][0]
    frame.at[index, "samples_s"] = np.asarray(frame.at[index, "samples_s"]) * args.factor
    for column in THROUGHPUT:
        if column in frame and pd.notna(frame.at[index, column]):
            frame.at[index, column] = frame.at[index, column] / args.factor
    for column in LATENCY:
        if column in frame and pd.notna(frame.at[index, column]):
            frame.at[index, column] = frame.at[index, column] * args.factor
    args.out.parent.mkdir(parents=True, exist_ok=True)
    frame.to_parquet(args.out)
    print(case)


if __name__ == "__main__":
    main()
