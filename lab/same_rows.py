"""Do two runs' rows describe the same cases, column for column, except what was measured?

The check for a refactor that must change no row (the engine's move out of pytest, the house
in floors): run one quick profile before and after (``imgbench run --profile quick --results
DIR``), then ``python lab/same_rows.py BEFORE_DIR AFTER_DIR``. Exit 0 when every case is in both
runs and every descriptive column matches; else it names each case and column that differ.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pandas as pd

# what one run measured or stamped, which two runs of the same code never share
MEASURED = {
    "run_id",
    "run_name",
    "run_group",
    "created_utc",
    "git_commit",
    "git_dirty",
    "node_label",
    "ray_node_id",
    "storage_endpoint",
    "io_reads_per_s",
    "io_read_kb_per_s",
    "io_r_await_ms",
    "io_util_pct",
    "io_window_s",
    "process_images_per_s",
    "page_faults_minor_per_image",
    "page_faults_major_per_image",
    "instructions_per_image",
    "estimated_cycles_per_image",
    "host_ratios",
    "host_ratio_median",
    "host_rounds_discarded",
    "host_wait_s",
    "host_probe_reference_s",
    "round_repeats",
    "iterations",
    "samples_s",
    "images_per_s_median",
    "images_per_s_q1",
    "images_per_s_q3",
    "mb_per_s_median",
    "megapixels_per_s_median",
    "latency_ms_median",
    "latency_ms_p90",
    "latency_ms_p99",
    "peak_rss_bytes",
    "wall_s",
    # the machine reference, timed once per run (imgbench.measure.reference)
    "reference_1_images_per_s",
    "reference_all_images_per_s",
    "reference_error",
    # a round's size follows its calibration (round_repeats): the rounds repeat the items
    "images_per_round",
    "bytes_per_round",
    "megapixels_per_round",
}
# keys of extra_json holding measured figures or this run's processes (the rest must match)
MEASURED_EXTRA = ("_s", "per_s", "rss", "bytes", "ratio", "seconds", "ms", "time", "pct")
MEASURED_EXTRA_KEYS = {
    "drained_batches",
    "worker_pids",
    "measured_again_after_building",
    "verified_outputs",
    "output_compared",
    # why a candidate is in the final follows the matrix's measured ranking (fastest, next, ...)
    "final_why",
}


def load(folder: Path) -> pd.DataFrame:
    files = sorted(folder.glob("*.parquet"))
    if not files:
        raise SystemExit(f"{folder}: no parquet files")
    frame = pd.concat([pd.read_parquet(f) for f in files], ignore_index=True)
    frame["key"] = frame["stage"].astype(str) + "|" + frame["case_id"].astype(str)
    if frame["key"].duplicated().any():
        dup = frame.loc[frame["key"].duplicated(), "key"].tolist()[:3]
        raise SystemExit(f"{folder}: a case appears twice: {dup}")
    return frame.set_index("key")


def same(a: object, b: object) -> bool:
    if a is None or (isinstance(a, float) and pd.isna(a)):
        return b is None or (isinstance(b, float) and pd.isna(b))
    if hasattr(a, "tolist"):
        a = a.tolist()
    if hasattr(b, "tolist"):
        b = b.tolist()
    return bool(a == b)


def descriptive_extra(text: object) -> dict[str, object]:
    if not isinstance(text, str) or not text:
        return {}
    return {
        k: v
        for k, v in json.loads(text).items()
        if k not in MEASURED_EXTRA_KEYS
        and not any(s in k for s in MEASURED_EXTRA)
        and not isinstance(v, float)
    }


def differences(before: pd.DataFrame, after: pd.DataFrame) -> list[str]:
    found = [f"only before: {k}" for k in sorted(set(before.index) - set(after.index))]
    found += [f"only after: {k}" for k in sorted(set(after.index) - set(before.index))]
    found += [f"column only before: {c}" for c in sorted(set(before) - set(after))]
    found += [f"column only after: {c}" for c in sorted(set(after) - set(before))]
    for key in sorted(set(before.index) & set(after.index)):
        for column in sorted((set(before) & set(after)) - MEASURED):
            a, b = before.at[key, column], after.at[key, column]
            if column == "extra_json":
                a, b = descriptive_extra(a), descriptive_extra(b)
            if column == "extra_json":
                a, b = (
                    {k: v for k, v in a.items() if not same(v, b.get(k))},
                    {k: v for k, v in b.items() if not same(v, a.get(k))},
                )
            if not same(a, b):
                found.append(f"{key}: {column}: {str(a)[:300]} -> {str(b)[:300]}")
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    args = parser.parse_args()
    before, after = load(args.before), load(args.after)
    found = differences(before, after)
    for line in found:
        print(line)
    print(f"{len(before)} rows before, {len(after)} after: {len(found)} differences")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
