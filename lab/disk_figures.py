"""Folder vs tar vs LMDB vs RecordIO, cold, on the emulated HDD and on the real disk, from one run.

Reads a results folder (a fresh clone's ``make bench`` writes both: the main session's cold
format reads are the real disk's, the ``-disk-hdd`` session's the HDD's, and each disk session's
DataLoader rows read cold; docs/disks.md) and prints two Markdown tables: the format stage's cold
shuffled reads of stored bytes, and the DataLoader's cold rows, per format: images/s on each disk
(median of the rows), the HDD over the real disk, and iostat's r/s on the HDD.

    .venv/bin/python lab/disk_figures.py [--results results] [RUN ...]

RUN: run groups, run ids or unique prefixes (default: the newest run's group, as
``imgbench report``). Reading rows only: no timing, safe on a busy machine.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Iterable

import pandas as pd

from imgbench.answer.disk_advice import HDD, REAL, cold_format_rows
from imgbench.report.cli import SelectionError, newest_group, select_runs
from imgbench.results.store import load_results

FORMATS = ("folder", "tar", "lmdb", "recordio")
LOADER_FORMAT = {"files": "folder"}  # a loader's params name the folder "files"


def _number(value: object) -> float | None:
    try:
        result = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return result if result == result else None


def _median(values: Iterable[float | None]) -> float | None:
    found = [v for v in values if v is not None]
    return statistics.median(found) if found else None


def format_table(frame: pd.DataFrame) -> list[dict[str, object]]:
    """Per format: cold shuffled stored-bytes reads on each disk (the same sample), the ratio."""
    cold = cold_format_rows(frame)
    cold = cold[(cold["order"] == "shuffled") & (cold["payload"] == "bytes")]
    hdd_images = set(cold[cold["disk"] == HDD]["images"])
    rows: list[dict[str, object]] = []
    for name in FORMATS:
        mine = cold[cold["format"] == name]
        if hdd_images:  # the real disk's rows of the HDD's sample size: a ratio of equals
            mine = mine[mine["images"].isin(hdd_images)]
        real = _median(mine[mine["disk"] == REAL]["images/s"])
        hdd = _median(mine[mine["disk"] == HDD]["images/s"])
        rows.append({"format": name, "real": real, "hdd": hdd})
    return rows


def loader_table(frame: pd.DataFrame) -> list[dict[str, object]]:
    """Per format: the DataLoader rows that read cold (every disk session's), each disk, ratio."""
    if frame.empty or "cache_state" not in frame:
        return []
    rows = frame[
        (frame["stage"].astype(str) == "loader")
        & (frame["status"].astype(str) == "ok")
        & (frame["cache_state"].astype(str) == "cold")
    ]
    found: dict[tuple[str, int], dict[str, list[float | None]]] = {}
    for _, row in rows.iterrows():
        params = json.loads(row["params_json"]) if isinstance(row["params_json"], str) else {}
        if "accelerator_images_per_s" in params:
            continue
        fmt = str(params.get("format", "files"))
        disk = str(row.get("disk_profile") or REAL)
        key = (LOADER_FORMAT.get(fmt, fmt), int(params.get("workers") or 0))
        cell = found.setdefault(key, {})
        cell.setdefault(disk, []).append(_number(row["images_per_s_median"]))
        cell.setdefault(f"{disk} r/s", []).append(_number(row.get("io_reads_per_s")))
    order = {name: i for i, name in enumerate(FORMATS)}
    return [
        {
            "format": fmt,
            "workers": workers,
            "real": _median(cell.get(REAL, [])),
            "hdd": _median(cell.get(HDD, [])),
            "hdd r/s": _median(cell.get(f"{HDD} r/s", [])),
        }
        for (fmt, workers), cell in sorted(
            found.items(), key=lambda kv: (order.get(kv[0][0], 9), kv[0])
        )
    ]


def _cell(value: object, digits: int = 0) -> str:
    number = _number(value)
    return "-" if number is None else f"{number:,.{digits}f}"


def markdown(rows: list[dict[str, object]], keys: tuple[str, ...]) -> list[str]:
    """A table of ``keys``, images/s on each disk, the HDD/real ratio, each format over the
    folder (same workers) on each disk, and the HDD's r/s where the rows carry it."""
    iostat = any("hdd r/s" in r for r in rows)
    head = [*keys, "real images/s", "hdd images/s", "hdd/real", "real / folder", "hdd / folder"]
    head += ["hdd r/s"] if iostat else []
    lines = [
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(keys) + "---:|" * (len(head) - len(keys)),
    ]
    for row in rows:
        folder = next(
            (f for f in rows if f["format"] == "folder" and f.get("workers") == row.get("workers")),
            None,
        )
        cells = [str(row[k]) for k in keys]
        real, hdd = _number(row["real"]), _number(row["hdd"])
        cells += [_cell(real), _cell(hdd), _cell(hdd / real if real and hdd else None, 2)]
        for disk, value in (("real", real), ("hdd", hdd)):
            base = _number(folder[disk]) if folder is not None else None
            cells.append(_cell(value / base if base and value else None, 2))
        if iostat:
            cells.append(_cell(row.get("hdd r/s")))
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="*", help="run groups, run ids or unique prefixes")
    parser.add_argument("--results", default="results", help="results folder (or s3:// prefix)")
    args = parser.parse_args(argv)
    frame = load_results(args.results).frame
    try:
        frame = select_runs(frame, args.runs) if args.runs else newest_group(frame)
    except SelectionError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if frame.empty:
        print(f"no rows in {args.results}", file=sys.stderr)
        return 2
    groups = sorted(frame["run_group"].dropna().astype(str).unique())
    print(f"rows of {', '.join(groups) or 'the chosen runs'} ({len(frame)} rows)\n")
    print("Format stage, cold shuffled reads of stored bytes (same sample on both disks):\n")
    print("\n".join(markdown(format_table(frame), ("format",))))
    loaders = loader_table(frame)
    print("\nDataLoader, cold rounds (OpenCV + albumentations train recipe):\n")
    if loaders:
        print("\n".join(markdown(loaders, ("format", "workers"))))
    else:
        print("no cold loader rows (make bench's disk sessions write them; root only)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
