"""`imgbench profile --env tensorflow` on a user's Keras PyDataset (the shipped
pipelines/keras_pydataset.py, real JPEGs), swept over workers x use_multiprocessing, for real in
the TensorFlow environment (skipped where it is not built, as tests/loaders/test_tensorflow_env.py).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from imgbench.profiling.keras import SETTING
from tests.profiling.conftest import extra, processes_mentioning, read_rows

TfProfiles = dict[str, tuple[subprocess.CompletedProcess[str], Path]]


def test_pydataset_swept_over_workers_and_multiprocessing(tf_profiles: TfProfiles) -> None:
    done, results = tf_profiles["keras-sweep"]  # workers 0,2 over the user's own 2 processes
    assert done.returncode == 0, done.stderr + done.stdout
    out = " ".join(done.stdout.split())  # rich wraps long lines
    assert "where the time goes" in out and "2 threads" in out and "2 processes (yours)" in out
    rows = read_rows(results)
    # 0 (inline) and 2 asked for, 2 as threads and as processes (the user's own)
    points = [(row["workers"], extra(row)["use_multiprocessing"]) for _, row in rows.iterrows()]
    assert points == [(0, False), (2, False), (2, True)]
    assert list(rows["status"]) == ["ok"] * 3, list(rows["reason"])
    assert set(rows["library"]) == {"keras-pydataset"} and set(rows["environment"]) == {
        "tensorflow"
    }
    assert rows["library_version"].str.fullmatch(r"3\.\d+\.\d+.*").all()
    assert rows["case_id"].str.endswith("use_multiprocessing=True").sum() == 1
    assert (rows["images_per_s_median"] > 0).all() and (rows["batch_size"] == 4).all()
    for _, row in rows.iterrows():
        x = extra(row)
        assert x["keras_setting"] == SETTING
        assert x["user_setting"] == x["use_multiprocessing"]
        assert x["batch_parts"] == [
            {"shape": [4, 96, 96, 3], "dtype": "float32"},
            {"shape": [4, 2], "dtype": "float64"},
        ]
        assert x["peak_pss_bytes"] > 0 and x["final_uss_bytes"]["main"] > 0
        shares = x["attribution"]  # py-spy's samples, in the main process and Keras's workers
        assert x["attribution_samples"] > 0 and abs(sum(shares.values()) - 1) < 0.01
        if x["use_multiprocessing"] is False and row["workers"] == 0:  # inline: always seen
            assert shares["decode"] + shares["augment"] > 0, shares
    processes = extra(rows.iloc[2])
    assert processes["start_method"] in ("fork", "forkserver", "spawn")
    # a pool per epoch: how many pools a short phase starts depends on the host's pace, and a
    # pool that came and went between two looks is not listed
    assert processes["worker_pids"] or any(
        k.startswith("worker-") for k in processes["final_uss_bytes"]
    ), processes.get("worker_pids")
    assert extra(rows.iloc[1])["start_method"] == "threads"
    assert extra(rows.iloc[0])["start_method"] is None  # inline: no pool
    assert list(results.glob("*.speedscope.json"))
    assert processes_mentioning(str(results.parent)) == []


def test_pydataset_whose_batch_raises_is_a_failed_row(tf_profiles: TfProfiles) -> None:
    done, results = tf_profiles["keras-bad"]  # bad=True, workers 0
    assert done.returncode == 1, done.stderr + done.stdout
    rows = read_rows(results)
    assert list(rows["workers"]) == [0, 1] and set(rows["status"]) == {
        "failed"
    }  # 1: Keras's default
    for reason in rows["reason"]:
        assert "UnidentifiedImageError" in reason and "keras_pydataset.py" in reason
