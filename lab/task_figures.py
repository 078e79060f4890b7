"""The figures a run gives for the tasks beyond classification (issue "Beyond one image and one
integer label"): the segmentation recipe's best images/s per loader (and its setting), the
one-hot cost per batch of crop-ocr's 4 heads of 21,000 classes (the DataLoader's collate and
Keras's ``to_categorical``), and Keras over tf.data on segmentation.

    .venv/bin/python lab/task_figures.py results/ [--run NAME]

Single rows of one run (not a final): read them with the run's noise (docs/measuring.md). Each
loader's best is the answer's own table (``imgbench.answer.tasks``), so this prints what
``imgbench report`` shows under "Other tasks".
"""

from __future__ import annotations

import argparse

import pandas as pd

from imgbench.answer.rows import is_experiment, task_of, where
from imgbench.answer.tasks import loader_key, setting, task_answers
from imgbench.results.schema import json_object
from imgbench.results.store import load_results


def onehot_table(frame: pd.DataFrame) -> pd.DataFrame:
    """crop-ocr's loader rows that timed their one-hot: ms per batch, at which batch and shape."""
    rows = frame[(frame["stage"] == "loader") & (frame["status"] == "ok")]
    rows = rows[where(rows, lambda r: task_of(r) == "crop-ocr" and not is_experiment(r))]
    found = []
    for _, row in rows.iterrows():
        extra = json_object(row["extra_json"])
        if "onehot_ms_per_batch" not in extra:
            continue
        params = json_object(row["params_json"])
        found.append(
            {
                "library": row["library"],
                "workers": int(row["workers"]),
                "method": params.get("method") or "",
                "batch": int(params.get("batch_size") or 0),
                "heads": "x".join(
                    str(v) for v in (extra.get("first_batch") or {}).get("labels_shape", [])
                ),
                "onehot_ms_per_batch": float(extra["onehot_ms_per_batch"]),
                "batches": int(extra.get("onehot_batches") or 0),
                "images_per_s": float(row["images_per_s_median"]),
            }
        )
    return pd.DataFrame(found)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results")
    parser.add_argument("--run", default=None, help="only rows whose run_name starts with this")
    args = parser.parse_args()
    frame = load_results(args.results).frame
    if args.run:
        frame = frame[frame["run_name"].astype(str).str.startswith(args.run)]
    pd.set_option("display.width", 200)
    for answer in task_answers(frame):
        print(f"\n{answer.title}")
        table = pd.DataFrame(
            [
                {
                    "loader": loader_key(m),
                    "images/s (95% interval)": m.figure().replace(" images/s (95% interval ", " ("),
                    "setting": setting(m),
                    "case": m.case_id,
                }
                for m in answer.per_loader
            ]
        )
        print(table.to_string(index=False, float_format=lambda v: f"{v:,.1f}"))
        for key, ratio in answer.versus():
            print(f"keras-pydataset at its best / {key} at its best: {ratio:.2f}")
    onehot = onehot_table(frame)
    print("\none-hot per batch (crop-ocr's heads, inside the collate / __getitem__):")
    if onehot.empty:
        print("no crop-ocr row timed its one-hot (rows older than onehot_ms_per_batch?)")
    else:
        print(onehot.to_string(index=False, float_format=lambda v: f"{v:,.2f}"))


if __name__ == "__main__":
    main()
