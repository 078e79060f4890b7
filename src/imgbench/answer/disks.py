"""The disk beside images/s: which device the read and format rows read, and what iostat would
have shown while they ran (the seed posts' HDD-vs-SSD advice is read off those figures).

The counters are device-wide (``imgbench.measure.storage``): on a busy machine other readers of
the same device show up in them too.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from imgbench.answer.rows import number

DISK_STAGES = ("read", "format")  # the report's tables; loader rows carry the columns too
IO_COLUMNS = {
    "io_reads_per_s": "r/s",
    "io_read_kb_per_s": "rkB/s",
    "io_r_await_ms": "r_await ms",
    "io_util_pct": "%util",
}


@dataclass(frozen=True)
class DiskTable:
    """One device: its line (``vda (disk, rotational, ext4 rw,relatime)``) and, per case, the
    median images/s beside the median iostat figures of its rows."""

    device: str
    table: pd.DataFrame  # stage, case, cache, images/s, r/s, rkB/s, r_await ms, %util


def device_line(row: pd.Series) -> str:
    """One line for a row's storage columns; ``no block device (tmpfs)`` where none."""
    name = row.get("storage_device")
    fs = row.get("storage_fs")
    if not isinstance(name, str) or not name:
        return f"no block device ({fs})" if isinstance(fs, str) and fs else "unknown"
    rotational = row.get("storage_rotational")
    spin = "rotation unknown" if pd.isna(rotational) else ("rotational" if rotational else "SSD")
    parts = [str(row.get("storage_device_kind") or "disk"), spin]
    model = row.get("storage_model")
    if isinstance(model, str) and model:
        parts.append(model)
    if isinstance(fs, str) and fs:
        options = row.get("storage_mount_options")
        parts.append(f"{fs} {options}" if isinstance(options, str) else fs)
    return f"{name} ({', '.join(parts)})"


def _median(values: pd.Series) -> float | None:
    found = [v for v in (number(x) for x in values) if v is not None]
    return float(pd.Series(found).median()) if found else None


def disk_tables(frame: pd.DataFrame, stages: tuple[str, ...] = DISK_STAGES) -> list[DiskTable]:
    """Per device the ok rows of ``stages`` read from, one line per case; empty when the rows
    predate the storage columns."""
    if frame.empty or "storage_fs" not in frame:
        return []
    rows = frame[
        (frame["status"].astype(str) == "ok")
        & frame["stage"].astype(str).isin(stages)
        & frame["storage_fs"].notna()
    ]
    if rows.empty:
        return []
    rows = rows.assign(
        _device=[device_line(r) for _, r in rows.iterrows()],
        _case=rows["library"].astype(str) + " · " + rows["variant"].astype(str),
        _cache=rows["cache_state"].fillna("n/a").astype(str),
    )
    tables = []
    for device, of_device in rows.groupby("_device", sort=True):
        records = []
        for (stage, case, cache), group in of_device.groupby(["stage", "_case", "_cache"]):
            record: dict[str, object] = {
                "stage": stage,
                "case": case,
                "cache": cache,
                "images/s": _median(group["images_per_s_median"]),
            }
            for column, title in IO_COLUMNS.items():
                record[title] = _median(group[column]) if column in group else None
            records.append(record)
        table = pd.DataFrame.from_records(records)
        tables.append(DiskTable(str(device), table.sort_values(["stage", "case", "cache"])))
    return tables


def text_table(table: pd.DataFrame) -> pd.DataFrame:
    """The table with its figures as text: images/s and rkB/s whole, the others to 0.1."""
    shown = table.copy()
    for column in shown.columns:
        if column in ("stage", "case", "cache"):
            continue
        digits = 0 if column in ("images/s", "rkB/s", "r/s") else 1
        shown[column] = [
            "" if (v := number(x)) is None else f"{v:,.{digits}f}" for x in shown[column]
        ]
    return shown.reset_index(drop=True)
