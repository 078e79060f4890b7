"""The answer learns the disk: per measured disk (an emulated profile, or the real disk), which
format and worker count to pick and whether packing pays off, and how much slower each format
reads cold on the emulated HDD than on the real disk. Read from the rows; rows of different disks
are never mixed in one comparison (the seed posts' HDD-vs-SSD advice, measured).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pandas as pd

from imgbench.answer.rows import number

REAL = "none"  # disk_profile of rows read from the disk the data sits on
HDD = "hdd"
FOLDER = "folder"
PACKED = ("tar", "lmdb", "recordio")  # im2rec's and the loaders' packed stores
PAYS_OFF = 1.1  # a packed store pays off when it reads at least this many times the folder
FORMAT_KEYS = ("format", "order", "payload")


def _params(row: pd.Series) -> dict[str, object]:
    text = row.get("params_json")
    return json.loads(text) if isinstance(text, str) and text else {}


def _ok(frame: pd.DataFrame, stage: str) -> pd.DataFrame:
    """The ok rows of ``stage`` read from local storage, with their disk (``none`` where the rows
    predate the column) and parameters beside them."""
    if frame.empty or "stage" not in frame:
        return frame.iloc[0:0]
    rows = frame[(frame["status"].astype(str) == "ok") & (frame["stage"].astype(str) == stage)]
    if "storage" in rows:
        rows = rows[rows["storage"].isna() | (rows["storage"].astype(str) == "local")]
    if rows.empty:
        return rows
    disk = rows["disk_profile"] if "disk_profile" in rows else pd.Series(REAL, index=rows.index)
    params = [_params(r) for _, r in rows.iterrows()]
    return rows.assign(
        _disk=disk.fillna(REAL).astype(str),
        _params=params,
        _ips=[number(v) for v in rows["images_per_s_median"]],
    )


def cold_format_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """Format-stage cold reads: one line per (disk, dataset, sample size, format, order,
    payload), median images/s of its rows."""
    rows = _ok(frame, "format")
    if rows.empty or "cache_state" not in rows:
        return pd.DataFrame(columns=["disk", "dataset", "images", *FORMAT_KEYS, "images/s"])
    rows = rows[(rows["cache_state"].astype(str) == "cold") & rows["_ips"].notna()]
    records = [
        {
            "disk": r["_disk"],
            "dataset": str(r.get("dataset_name")),
            # the same sample on both disks: a ratio of different samples says nothing
            "images": int(n) if (n := number(r.get("sample_images"))) is not None else -1,
            **{k: str(r["_params"].get(k, "")) for k in FORMAT_KEYS},
            "images/s": r["_ips"],
        }
        for _, r in rows.iterrows()
        if r["_params"].get("mode") == "read"
    ]
    if not records:
        return pd.DataFrame(columns=["disk", "dataset", "images", *FORMAT_KEYS, "images/s"])
    table = pd.DataFrame.from_records(records)
    keys = ["disk", "dataset", "images", *FORMAT_KEYS]
    return table.groupby(keys, as_index=False)["images/s"].median()


def hdd_over_real(frame: pd.DataFrame) -> pd.DataFrame:
    """Per format (and order, payload, dataset and sample size) read cold on both: the emulated
    HDD's images/s over the real disk's; empty where no format was read cold on both."""
    cold = cold_format_rows(frame)
    columns = ["dataset", "images", *FORMAT_KEYS, "real images/s", "hdd images/s", "hdd/real"]
    if cold.empty:
        return pd.DataFrame(columns=columns)
    keys = ["dataset", "images", *FORMAT_KEYS]
    real = cold[cold["disk"] == REAL].set_index(keys)["images/s"]
    hdd = cold[cold["disk"] == HDD].set_index(keys)["images/s"]
    both = pd.concat({"real images/s": real, "hdd images/s": hdd}, axis=1).dropna()
    if both.empty:
        return pd.DataFrame(columns=columns)
    both["hdd/real"] = both["hdd images/s"] / both["real images/s"]
    return both.reset_index().sort_values(keys)[columns].reset_index(drop=True)


@dataclass(frozen=True)
class LoaderPick:
    library: str
    variant: str
    format: str
    workers: int
    images_per_s: float
    cache: str  # the rows' cache_state: cold on an emulated disk, warm (n/a) on the real one


@dataclass(frozen=True)
class Packing:
    format: str
    ratio: float  # its cold shuffled images/s over the folder's, same disk and dataset

    @property
    def pays_off(self) -> bool:
        return self.ratio >= PAYS_OFF


@dataclass(frozen=True)
class DiskAdvice:
    """What one disk's rows say: the fastest loader row, and packed stores against the folder."""

    disk: str  # the profile name, ``none`` for the real disk
    loader: LoaderPick | None
    packing: tuple[Packing, ...]
    best_format: str | None  # the fastest cold shuffled read among every format

    @property
    def title(self) -> str:
        return "the real disk" if self.disk == REAL else f"the emulated {self.disk} disk"

    def lines(self) -> list[str]:
        """Sentences for the Overview and ``imgbench advise``."""
        out = []
        if self.loader is not None:
            pick = self.loader
            out.append(
                f"On {self.title}: pick {pick.library} {pick.variant} over {pick.format} with "
                f"{pick.workers} workers ({pick.images_per_s:,.0f} images/s, {pick.cache} reads)."
            )
        if self.best_format is not None:
            out.append(
                f"On {self.title}, the fastest cold shuffled format read: {self.best_format}."
            )
        if self.packing:
            paying = [p for p in self.packing if p.pays_off]
            shown = ", ".join(f"{p.format} {p.ratio:.2f}x" for p in self.packing)
            verdict = (
                f"packing pays off ({', '.join(p.format for p in paying)})"
                if paying
                else "packing does not pay off"
            )
            out.append(
                f"On {self.title} {verdict}: cold shuffled reads over the folder's {shown} "
                f"(pays off at {PAYS_OFF}x or more)."
            )
        return out


def _loader_pick(rows: pd.DataFrame) -> LoaderPick | None:
    """The fastest steady loader row: local, no emulated accelerator, cold where the disk is
    emulated (a warm row on an emulated disk reads the page cache, not the disk)."""
    keep = []
    for _, row in rows.iterrows():
        params = row["_params"]
        if row["_ips"] is None or "accelerator_images_per_s" in params:
            continue
        if row["_disk"] != REAL and row.get("cache_state") != "cold":
            continue
        keep.append(row)
    if not keep:
        return None
    best = max(keep, key=lambda r: float(r["_ips"]))
    cache = best.get("cache_state")
    return LoaderPick(
        library=str(best["library"]),
        variant=str(best["variant"]),
        format=str(best["_params"].get("format", "files")),
        workers=int(number(best.get("workers")) or 0),
        images_per_s=float(best["_ips"]),
        cache=str(cache) if isinstance(cache, str) else "warm",
    )


def _packing(cold: pd.DataFrame) -> tuple[tuple[Packing, ...], str | None]:
    """Packed stores over the folder, cold shuffled stored bytes (the first dataset that has the
    folder; its sample), and the fastest format there."""
    shuffled = cold[(cold["order"] == "shuffled") & (cold["payload"] == "bytes")]
    if shuffled.empty:
        return (), None
    for _, of_dataset in shuffled.groupby(["dataset", "images"], sort=True):
        ips = of_dataset.set_index("format")["images/s"]
        best = str(ips.idxmax())
        if FOLDER not in ips:
            return (), best
        folder = float(ips[FOLDER])
        found = tuple(
            Packing(name, float(ips[name]) / folder) for name in PACKED if name in ips and folder
        )
        return found, best
    return (), None


def disk_advice(frame: pd.DataFrame) -> list[DiskAdvice]:
    """One advice per disk the rows were measured on (the real disk first); empty when the rows
    carry no disk to tell apart and no cold format reads."""
    loaders = _ok(frame, "loader")
    cold = cold_format_rows(frame)
    disks = set(cold["disk"]) | (set(loaders["_disk"]) if not loaders.empty else set())
    emulated = {d for d in disks if d != REAL}
    if not emulated:
        return []  # one disk: nothing to tell apart (the Disks tables show it)
    advice = []
    for disk in sorted(disks, key=lambda d: (d != REAL, d)):
        mine = loaders[loaders["_disk"] == disk] if not loaders.empty else loaders
        packing, best = _packing(cold[cold["disk"] == disk])
        pick = _loader_pick(mine) if not mine.empty else None
        if pick is None and not packing and best is None:
            continue
        advice.append(DiskAdvice(disk, pick, packing, best))
    return advice
