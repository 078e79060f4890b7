"""The figures a run gives for the systems people pick: each loader's best images/s beside the
DataLoader's best on the same recipe, each decoder on one thread and inside the loader, and
AlbumentationsX beside albumentations on the same transforms.

    .venv/bin/python lab/systems_figures.py results/ [--run NAME]

Single rows of one run (not a final): read them with the run's noise (docs/measuring.md). Rows
of the primary dataset only (the loaders' recipe is compared on one dataset); AU rows, decode-only
passes and experiments are left out.
"""

from __future__ import annotations

import argparse

import pandas as pd

from imgbench.answer.decoders import decoder_rankings
from imgbench.answer.rows import REFERENCE_LOADER, is_decode_only, is_experiment, where
from imgbench.results.schema import json_object
from imgbench.results.store import load_results


def _recipe(params_json: object) -> str:
    return str(json_object(params_json).get("pipeline") or "").partition(":")[2]


def loader_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Per loader and recipe: its best images/s (and where), the DataLoader's best, the ratio."""
    rows = frame[(frame["stage"] == "loader") & (frame["status"] == "ok")]
    rows = rows[~where(rows, is_experiment) & ~where(rows, is_decode_only)]
    params = [json_object(p) for p in rows["params_json"]]
    rows = rows.assign(
        recipe=[_recipe(p) for p in rows["params_json"]],
        au=[bool(p.get("accelerator_images_per_s")) for p in params],
        ips=pd.to_numeric(rows["images_per_s_median"]).astype(float),
    )
    rows = rows[~rows["au"] & (rows["recipe"] != "")]
    best = rows.sort_values("ips", ascending=False).groupby(["recipe", "library"]).head(1)
    reference = best[best["library"] == REFERENCE_LOADER].set_index("recipe")["ips"]
    out = best.assign(
        dataloader_best=best["recipe"].map(reference),
        workers=best["workers"],
    )
    out = out.assign(ratio=out["ips"] / out["dataloader_best"])
    columns = ["recipe", "library", "variant", "workers", "ips", "dataloader_best", "ratio"]
    return out[columns].sort_values(["recipe", "ips"], ascending=[True, False])


def augment_pairs(frame: pd.DataFrame, a: str, b: str) -> pd.DataFrame:
    """The same augment case in library ``a`` and ``b``: images/s of each and b/a."""
    rows = frame[(frame["stage"] == "augment") & (frame["status"] == "ok")]
    ips = pd.to_numeric(rows["images_per_s_median"]).astype(float)
    rows = rows.assign(ips=ips, key=rows["case_id"].str.replace(f"/{b}/", f"/{a}/", regex=False))
    left = rows[rows["library"] == a].groupby("key")["ips"].median()
    right = rows[rows["library"] == b].groupby("key")["ips"].median()
    table = pd.DataFrame({a: left, b: right}).dropna()
    table[f"{b}/{a}"] = table[b] / table[a]
    table.index = [k.split("[", 1)[1].rstrip("]") for k in table.index]
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results")
    parser.add_argument("--run", default=None, help="only rows whose run_name starts with this")
    args = parser.parse_args()
    frame = load_results(args.results).frame
    if args.run:
        frame = frame[frame["run_name"].astype(str).str.startswith(args.run)]
    primary = frame["dataset_name"].mode().iloc[0]
    main_rows = frame[frame["dataset_name"] == primary]
    pd.set_option("display.width", 200)
    print(f"loaders on {primary}: best images/s per loader and recipe, beside the DataLoader's")
    print(loader_table(main_rows).to_string(index=False, float_format=lambda v: f"{v:,.2f}"))
    for ranking in decoder_rankings(frame):
        print(f"\ndecoders, {ranking.title}: one thread")
        print(ranking.single_text().to_string(index=False))
        print(f"inside the loader ({ranking.loader}, {ranking.pipeline}):")
        print(ranking.in_loader_text().to_string(index=False))
    print("\nAlbumentationsX beside albumentations (one thread, same transform):")
    table = augment_pairs(main_rows, "albumentations", "albumentationsx")
    print(table.to_string(float_format=lambda v: f"{v:,.2f}"))
    if not table.empty:
        print(f"median albumentationsx/albumentations: {table.iloc[:, 2].median():.3f}")


if __name__ == "__main__":
    main()
