"""tf.data (from files and from TFRecord) and Keras PyDataset, run for real in the tensorflow env.

The env is built by `make test` and `make bench` (`imgbench env create tensorflow`); where it
is missing these tests skip with that command as the reason.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from imgbench.envs import env_dir
from imgbench.paths import repo_root

ROOT = repo_root()
BENCHES = Path(__file__).resolve().parents[2] / "benches"


@pytest.fixture(scope="module")
def tf_rows(tmp_path_factory: pytest.TempPathFactory, photo_dir_48: Path) -> pd.DataFrame:
    assert ROOT is not None
    python = env_dir("tensorflow", ROOT) / "bin" / "python"
    if not python.exists():
        pytest.skip("tensorflow env not built here (`imgbench env create tensorflow`)")
    out = tmp_path_factory.mktemp("tf-loaders")
    dataset = photo_dir_48  # the default profile's batches are 32
    proc = subprocess.run(
        [
            str(python),
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            str(BENCHES / "bench_loaders.py"),
            "--imgbench-env=tensorflow",
            "--imgbench-profile=default",
            "--imgbench-rounds=3",
            f"--dataset={dataset}",
            f"--imgbench-results={out / 'results'}",
            "-k",
            "tf-data or keras",
        ],
        cwd=out,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (parquet,) = (out / "results").glob("*.parquet")
    return pd.read_parquet(parquet)


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
    row = tf_rows[tf_rows.library == "keras-pydataset"].iloc[0]
    extra = json.loads(row.extra_json)
    assert row.workers == 2
    assert extra["workers_left_after_reap"] == []


def test_tensorflow_batches_pass_the_first_batch_check(tf_rows: pd.DataFrame) -> None:
    """tf.data's eager tensors (B x 224 x 224 x 3) and Keras's NumPy batches are checked too."""
    for _, row in tf_rows.iterrows():
        extra = json.loads(row.extra_json)
        assert extra["first_batch_check"] == "pass", row.test_id
        expected = [32, 224, 224, 3] if row.library == "tf-data" else [32, 3, 224, 224]
        assert extra["first_batch"]["shape"] == expected
        versions = set(extra["pipeline_versions"])
        assert "numpy" in versions and "torch" not in versions  # no torch in that environment
        own = {"tf-data": {"tensorflow-cpu"}, "keras-pydataset": {"keras", "pillow"}}
        assert own[row.library] <= versions, (row.test_id, versions)
