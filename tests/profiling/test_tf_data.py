"""`imgbench profile --env tensorflow` on the shipped tf.data pipeline, for real in the
TensorFlow environment (skipped where it is not built, as tests/loaders/test_tensorflow_env.py)."""

from __future__ import annotations

import importlib.util
import subprocess
from pathlib import Path

import pytest

from imgbench.envs import env_dir
from imgbench.profiling.tfdata import ATTRIBUTION_REASON, SETTING
from tests.profiling.conftest import (
    PIPELINES,
    REPO,
    extra,
    processes_mentioning,
    read_rows,
    run_profile,
)

TfProfiles = dict[str, tuple[subprocess.CompletedProcess[str], Path]]


def test_tf_data_pipeline_swept_over_its_thread_pool(tf_profiles: TfProfiles) -> None:
    done, results = tf_profiles["tf-data-sweep"]  # threads 1,2 over the pipeline's own 3
    assert done.returncode == 0, done.stderr + done.stdout
    out = " ".join(done.stdout.split())  # rich wraps long lines
    assert "threads (0: TF default)" in done.stdout and "AU @ 50 ms" in done.stdout
    assert f"where the time goes: {ATTRIBUTION_REASON}" in out
    rows = read_rows(results)
    # 1 and 2 asked for, 3 the pipeline's own private_threadpool_size
    assert list(rows["workers"]) == [1, 2, 3]
    assert list(rows["status"]) == ["ok"] * 3
    assert set(rows["stage"]) == {"profile"} and set(rows["library"]) == {"tf-data"}
    assert set(rows["environment"]) == {"tensorflow"}
    assert rows["library_version"].str.fullmatch(r"2\.\d+\.\d+.*").all()
    assert rows["case_id"].str.endswith(("/threads=1", "/threads=2", "/threads=3")).all()
    assert (rows["images_per_s_median"] > 0).all() and (rows["batch_size"] == 8).all()
    for _, row in rows.iterrows():
        x = extra(row)
        assert x["tf_data_setting"] == SETTING and x["tf_threads"] == row["workers"]
        assert x["user_setting"] == (row["workers"] == 3)
        assert x["time_to_first_batch_s"] > 0
        assert 0 < x["au"] <= 1.01 and x["step_ms"] == 50
        assert x["peak_pss_bytes"] > 0 and x["final_uss_bytes"]["main"] > 0
        assert x["memory_timeline"]
        assert x["attribution_reason"] == ATTRIBUTION_REASON and "attribution" not in x
        assert x["batch_parts"][0] == {"shape": [8, 128, 128, 3], "dtype": "float32"}
    assert not list(results.glob("*.speedscope.json"))  # no stacks, so no flame graph
    assert processes_mentioning(str(results.parent)) == []


def test_tf_data_element_that_raises_is_a_failed_row(tf_profiles: TfProfiles) -> None:
    done, results = tf_profiles["tf-data-bad"]  # bad=True, threads 1
    assert done.returncode == 1, done.stderr + done.stdout
    rows = read_rows(results)
    assert list(rows["workers"]) == [0, 1]  # the sweep went on past the first failure
    assert set(rows["status"]) == {"failed"}
    for reason in rows["reason"]:
        assert "a tf.data element raised InvalidArgumentError: Unknown image file format" in reason
        assert "{{" not in reason


def test_factory_returning_something_else_is_one_line(tmp_path: Path) -> None:
    """From the main env, as a user types it: `--env tensorflow` hands the command to that env's
    interpreter (the profiles above run in one interpreter of the env, so this is the test of
    the hand-over), which prints the one line."""
    if not (env_dir("tensorflow", REPO) / "bin" / "python").exists():
        pytest.skip("tensorflow env not built here (`imgbench env create tensorflow`)")
    done = run_profile(
        [f"{PIPELINES}.tf_data:make_number", "--env", "tensorflow"], tmp_path / "results"
    )
    assert "/.venvs/tensorflow/bin/python -m imgbench.cli profile" in " ".join(done.stdout.split())
    assert done.returncode == 2
    assert (
        "error: factory tests.profiling.pipelines.tf_data:make_number returned int, "
        "not a torch Dataset or DataLoader or a tf.data.Dataset" in done.stderr
    )


@pytest.mark.skipif(
    importlib.util.find_spec("tensorflow") is not None, reason="TensorFlow is in this env"
)
def test_main_environment_says_to_pass_env_tensorflow(photos: Path, tmp_path: Path) -> None:
    done = run_profile(
        [f"{PIPELINES}.tf_data:make_dataset", "--kw", f"root={photos}"], tmp_path / "results"
    )
    assert done.returncode == 2
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert "No module named 'tensorflow'" in lines[0] and "pass --env tensorflow" in lines[0]
