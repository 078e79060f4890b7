"""Object storage's figures: each format read from local disk and from S3 at 0 and 50 ms, and the
DataLoader worker count that hides the network for each streaming pipeline.

Runs one profile (``s3fig``, written to a scratch pyproject.toml: the default matrix's formats
with every S3 reader, warm local cache, stored bytes, both orders, unshaped and through a 50 ms
path; the DataLoader over ``s3-tar`` and ``s3-objects`` at 0-4 workers with AU at an emulated
100 images/s accelerator, and its local-files rows for reference) in the main environment, and
its MDS cases in the ``mosaic`` environment where that is built (``make mosaic-env``; otherwise
they are reported missing). Then prints two Markdown tables from the rows.

    .venv/bin/python lab/s3_figures.py --out /tmp/s3fig          # ~15 min on 2 cores
    .venv/bin/python lab/s3_figures.py --tables RESULTS.parquet ... # tables only

A timing job: run it on a quiet machine, alone.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parents[1]
SHAPED = "rtt50ms-unlimited"
PROFILE = f"""
[tool.imgbench.profiles.s3fig]
base = "default"
description = "formats from local disk and S3 at 0 and 50 ms; the S3 loaders' worker sweep"
environments = ["mosaic"]
extra_datasets = []

[tool.imgbench.profiles.s3fig.format]
libraries = ["folder", "tar", "litdata", "parquet", "mds"]
caches = ["warm"]
payloads = ["bytes"]
raw_ceiling = false
network_shapes = ["rtt0ms-unlimited", "{SHAPED}"]

[tool.imgbench.profiles.s3fig.loader]
libraries = ["torch-dataloader"]
worker_sweep = []
sweep_pipelines = []
extra_pipelines = []
au_accelerators = [100]
cow_workers = []
s3_pipelines = ["s3-tar", "s3-objects"]
s3_workers = [0, 1, 2, 3, 4]
s3_network_shapes = ["rtt0ms-unlimited", "{SHAPED}"]
"""
HIDDEN_AU = 0.90  # the answer: the fewest workers whose AU reaches 90% (as docs/loaders.md)


def run(out: Path, *, mosaic_only: bool = False) -> list[Path]:
    """Measure the profile's sessions into ``out/results``; the parquet files written."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "pyproject.toml").write_text(PROFILE)
    results = out / "results"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)])}
    python = str(REPO / ".venv" / "bin" / "python")
    benches = REPO / "benches"
    main = [
        python,
        "-m",
        "pytest",
        str(benches / "bench_formats.py"),
        str(benches / "bench_loaders.py"),
        "-p",
        "no:cacheprovider",
        "--imgbench-profile=s3fig",
        f"--imgbench-results={results}",
        "--benchmark-save=s3fig",
    ]
    if not mosaic_only:
        subprocess.run(main, cwd=out, env=env, check=False)
    from imgbench.envs import is_built

    if is_built("mosaic"):
        imgbench = str(REPO / ".venv" / "bin" / "imgbench")
        mosaic = [imgbench, "run", "--profile", "s3fig", "--env", "mosaic"]
        mosaic += ["--results", str(results), "--name", "s3fig", "--benches", str(benches)]
        subprocess.run([*mosaic, "-k", "format"], cwd=out, env=env, check=False)
    else:
        print("no MDS rows: the mosaic env is not built (make mosaic-env)", file=sys.stderr)
    return sorted(results.glob("*.parquet"))


def _rows(files: list[Path]) -> pd.DataFrame:
    frame = pd.concat([pd.read_parquet(f) for f in files], ignore_index=True)
    frame["params"] = frame["params_json"].map(json.loads)
    frame["extra"] = frame["extra_json"].map(lambda s: json.loads(s) if isinstance(s, str) else {})
    frame["storage"] = frame["storage"].fillna("local")
    frame["network_shaping"] = frame["network_shaping"].fillna("none")
    return frame[frame["status"] == "ok"]


def _fmt(value: float | None) -> str:
    return "-" if value is None or pd.isna(value) else f"{value:,.0f}"


def format_table(frame: pd.DataFrame) -> str:
    """images/s of each format's byte read: local (warm), S3 unshaped and through 50 ms."""
    reads = frame[(frame["stage"] == "format") & (frame["mode"] == "read")]
    columns = [
        ("local", "none", "sequential"),
        ("local", "none", "shuffled"),
        ("s3", "none", "sequential"),
        ("s3", "none", "shuffled"),
        ("s3", SHAPED, "sequential"),
        ("s3", SHAPED, "shuffled"),
    ]
    lines = [
        "| format | local seq | local shuf | S3 0 ms seq | S3 0 ms shuf | S3 50 ms seq | "
        "S3 50 ms shuf | first sample, S3 0 / 50 ms (ms) | upload (s) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name in ["folder", "tar", "litdata", "parquet", "mds"]:
        mine = reads[reads["params"].map(lambda p, n=name: p.get("format") == n)]
        cells = []
        for storage, shaping, order in columns:
            hit = mine[
                (mine["storage"] == storage)
                & (mine["network_shaping"] == shaping)
                & (mine["params"].map(lambda p, o=order: p.get("order") == o))
            ]
            cells.append(_fmt(hit["images_per_s_median"].median() if len(hit) else None))
        s3 = mine[mine["storage"] == "s3"]
        first = [
            s3[s3["network_shaping"] == shaping]["extra"].map(
                lambda e: e.get("time_to_first_sample_s")
            )
            for shaping in ("none", SHAPED)
        ]
        first_ms = " / ".join(
            f"{series.dropna().median() * 1e3:,.0f}" if series.notna().any() else "-"
            for series in first
        )
        uploads = s3["extra"].map(lambda e: e.get("upload_s")).dropna()
        upload = f"{uploads.median():.2f}" if len(uploads) else "-"
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {first_ms} | {upload} |")
    return "\n".join(lines)


def loader_table(frame: pd.DataFrame) -> str:
    """The S3 DataLoader sweep: images/s (and AU) per worker count; the best count."""
    loaders = frame[(frame["stage"] == "loader") & (frame["storage"] == "s3")]
    lines = [
        "| pipeline | path | images/s (AU) at 0 / 1 / 2 / 3 / 4 workers | fewest workers hiding it |",
        "|---|---|---|---|",
    ]
    for fmt, pipeline in (("tar", "s3-tar"), ("folder", "s3-objects")):
        for shaping in ("none", SHAPED):
            rows = loaders[
                (loaders["network_shaping"] == shaping)
                & (loaders["params"].map(lambda p, f=fmt: p.get("format") == f))
            ].sort_values("workers")
            if rows.empty:
                continue
            cells = [
                f"{r.images_per_s_median:,.0f} ({r.extra.get('au', float('nan')):.0%})"
                for r in rows.itertuples()
            ]
            au = rows["extra"].map(lambda e: e.get("au", float("nan")))
            hidden = rows[au >= HIDDEN_AU]["workers"]
            top = rows.loc[rows["images_per_s_median"].idxmax()]
            best = (
                f"{int(hidden.min())}"
                if len(hidden)
                else f"none reach {HIDDEN_AU:.0%} (most: {int(top.workers)}, AU {au.max():.0%})"
            )
            path = "unshaped" if shaping == "none" else shaping
            lines.append(f"| {pipeline} | {path} | {' / '.join(cells)} | {best} |")
    local = frame[(frame["stage"] == "loader") & (frame["storage"] == "local")]
    local = local[local["case_id"].str.contains("au-sleep")].sort_values("workers")
    for r in local.itertuples():
        lines.append(
            f"| local files (reference) | - | {int(r.workers)} workers: {r.images_per_s_median:,.0f} "
            f"({r.extra.get('au', float('nan')):.0%}) | |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("/tmp/imgbench-s3fig"))
    parser.add_argument("--tables", type=Path, nargs="*", help="only print tables of these files")
    parser.add_argument("--mosaic-only", action="store_true", help="only the mosaic env's cases")
    opts = parser.parse_args()
    files = opts.tables or run(opts.out, mosaic_only=opts.mosaic_only)
    frame = _rows(files)
    print(format_table(frame))
    print()
    print(loader_table(frame))
    rtts = frame.loc[frame["network_shaping"] == SHAPED, "network_rtt_ms"].dropna()
    if len(rtts):
        print(f"\nmeasured round trip through {SHAPED}: median {rtts.median():.1f} ms")


if __name__ == "__main__":
    main()
