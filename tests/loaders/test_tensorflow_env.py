"""tf.data (from files and from TFRecord) and Keras PyDataset, run for real in the tensorflow env.

The env is built by `make test` and `make bench` (`imgbench env create tensorflow`); where it
is missing these tests skip with that command as the reason.
"""

from __future__ import annotations

import json
import os

import pandas as pd
import pytest

from tests.loaders.conftest import TensorflowSession


@pytest.fixture(scope="module")
def tf_rows(tf_session: TensorflowSession) -> pd.DataFrame:
    """The rows of the env's one bench session (tests/loaders/conftest.py; skipped where the env
    is not built)."""
    return tf_session.rows


def test_tf_data_from_files_and_tfrecord_and_keras(tf_rows: pd.DataFrame) -> None:
    assert (tf_rows.status == "ok").all(), tf_rows.reason.tolist()
    assert (tf_rows.environment == "tensorflow").all()
    formats = {
        (lib, json.loads(p)["format"])
        for lib, p in zip(tf_rows.library, tf_rows.params_json, strict=True)
    }
    assert formats == {("tf-data", "files"), ("tf-data", "tfrecord"), ("keras-pydataset", "files")}
    assert (tf_rows.images_per_s_median > 0).all()
    assert tf_rows.library_version.notna().all()


def test_tfrecord_is_written_by_tensorflow_and_cleaned_up(tf_rows: pd.DataFrame) -> None:
    row = tf_rows[tf_rows.variant.str.startswith("tfrecord")].iloc[0]
    extra = json.loads(row.extra_json)
    assert extra["tfrecord_written_by"] == "tf.io.TFRecordWriter"
    assert extra["tfrecord_bytes"] > 48 * 1000  # 48 JPEGs
    assert set(extra["stage_times_s"]) >= {"read", "decode", "augment"}


def test_keras_workers_are_processes_and_are_reaped(tf_rows: pd.DataFrame) -> None:
    keras = tf_rows[tf_rows.library == "keras-pydataset"]
    row = keras[keras.task == "classification"].iloc[0]
    assert row.workers == 2
    for _, row in keras.iterrows():  # every setting: inline, threads and processes
        assert json.loads(row.extra_json)["workers_left_after_reap"] == [], row.test_id


# the first batch's images by loader and task: tf.data's are HxWx3, crop-ocr's 32x128x3
SHAPES = {
    ("tf-data", "classification"): [32, 224, 224, 3],
    ("tf-data", "segmentation"): [32, 224, 224, 3],
    ("keras-pydataset", "classification"): [32, 3, 224, 224],
    ("keras-pydataset", "segmentation"): [32, 3, 224, 224],
    ("keras-pydataset", "crop-ocr"): [32, 32, 128, 3],
}


def test_tensorflow_batches_pass_the_first_batch_check(tf_rows: pd.DataFrame) -> None:
    """tf.data's eager tensors (B x 224 x 224 x 3) and Keras's NumPy batches are checked too."""
    for _, row in tf_rows.iterrows():
        extra = json.loads(row.extra_json)
        assert extra["first_batch_check"] == "pass", row.test_id
        assert extra["first_batch"]["shape"] == SHAPES[row.library, row.task], row.test_id
        versions = set(extra["pipeline_versions"])
        assert "numpy" in versions and "torch" not in versions  # no torch in that environment
        own = {"tf-data": {"tensorflow-cpu"}, "keras-pydataset": {"keras", "pillow"}}
        assert own[row.library] <= versions, (row.test_id, versions)


def _settings(rows: pd.DataFrame, library: str, task: str) -> set[tuple[str, int, str | None]]:
    found = rows[(rows.library == library) & (rows.task == task)]
    return {
        (json.loads(p)["format"], int(w), json.loads(p).get("method"))
        for p, w in zip(found.params_json, found.workers, strict=True)
    }


def test_the_default_profile_runs_the_tasks_in_tf_data_and_keras(tf_rows: pd.DataFrame) -> None:
    """make bench's task rows in the tensorflow env, as the session selects them: tf.data's
    segmentation from the pairs' PNG files, Keras's inline, crop-ocr in Keras on threads and on
    processes (the profile's whole list: tests/loaders/test_tf_tasks.py)."""
    cores = os.cpu_count() or 2
    assert _settings(tf_rows, "tf-data", "segmentation") == {("files", 0, None)}
    assert _settings(tf_rows, "keras-pydataset", "segmentation") == {("files", 0, None)}
    assert _settings(tf_rows, "keras-pydataset", "crop-ocr") == {
        ("files", cores, "threads"),
        ("files", cores, "processes"),
    }
    for _, row in tf_rows[tf_rows.task == "segmentation"].iterrows():
        extra = json.loads(row.extra_json)
        assert extra["pair_images"] == ["png"], row.test_id  # seed 003's PNG + PNG pairs
        assert extra["first_batch"]["labels_shape"] == [32, 224, 224]
        if row.library == "tf-data":
            assert extra["image_decode_op"] == "decode_image", row.test_id  # PNG: not JPEG's


def test_keras_crop_ocr_rows_time_the_one_hot_per_batch(tf_rows: pd.DataFrame) -> None:
    """to_categorical of 4 heads x 21,000 classes per batch: its own figure in each row."""
    rows = tf_rows[tf_rows.task == "crop-ocr"]
    assert not rows.empty
    for _, row in rows.iterrows():
        extra = json.loads(row.extra_json)
        assert extra["first_batch"]["labels_shape"] == [32, 4, 21_000]
        assert extra["onehot_ms_per_batch"] > 0 and extra["onehot_batches"] >= 1, row.test_id
    others = tf_rows[tf_rows.task != "crop-ocr"]
    assert not any("onehot_ms_per_batch" in json.loads(e) for e in others.extra_json)
