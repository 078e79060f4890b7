"""tf.data on tasks and on PNG, for real in the tensorflow env (tests/loaders/tf_tasks_probe.py
runs in its one bench session, after the cases of tests/loaders/test_tensorflow_env.py): the
segmentation recipe from the pairs' files and from TFRecord, JPEG and PNG images, palette and
colour masks; a PNG classification pool; a mask colour not in the table. Skipped where the env
is not built, as tests/loaders/test_tensorflow_env.py is."""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pytest

from imgbench.augment.tasks import N_CLASSES
from imgbench.loaders.documented import AS_DOCUMENTED, ROI
from imgbench.loaders.registry import get_loader, pipeline_config
from tests.loaders.conftest import TensorflowSession
from tests.loaders.windows import check_window_distribution


@pytest.fixture(scope="module")
def probed(tf_session: TensorflowSession) -> dict[str, Any]:
    """What the probe found, run in the env's one bench session after its cases
    (tests/loaders/conftest.py; skipped where the env is not built)."""
    assert "probe_error" not in tf_session.probe, tf_session.probe["probe_error"]
    return tf_session.probe


@pytest.mark.parametrize("source", ["files-jpeg", "tfrecord-jpeg", "files-png", "tfrecord-png"])
def test_segmentation_first_batch(probed: dict[str, Any], source: str) -> None:
    got = probed[source]
    assert got.get("check") == "pass", got
    assert got["images"] == [[4, 224, 224, 3], "float32"]
    assert got["targets"] == [[4, 224, 224], "int64"]
    assert set(got["classes"]) <= set(range(N_CLASSES)) and len(got["classes"]) >= 2
    assert got["all_jpeg"] == source.endswith("jpeg")  # a JPEG pool keeps decode_jpeg
    assert got["stage_times"] == ["augment", "decode", "read"]


@pytest.mark.parametrize("pool", ["classification-png", "png-named-jpg"])
def test_png_classification_pool_runs(probed: dict[str, Any], pool: str) -> None:
    got = probed[pool]
    assert got.get("check") == "pass", got
    assert got["images"] == [[4, 224, 224, 3], "float32"] and got["targets"] == [[4], "int64"]
    assert got["all_jpeg"] is False  # decode_image: the codec from the bytes


def test_mask_colour_not_in_the_table_names_the_file(probed: dict[str, Any]) -> None:
    error = probed["bad-colour"]["error"]
    assert "a mask colour is not in the colour table" in error
    assert "pairs-bad/masks/00000.png" in error


def test_tf_data_runs_the_segmentation_pipelines_in_default_and_full() -> None:
    from imgbench.loaders.cases import loader_cases
    from imgbench.profiles import get_profile

    spec = get_loader("tf-data")
    tasks = {pipeline_config(n).task: n for n in spec.pipelines}
    assert "segmentation" in tasks
    assert pipeline_config("tensorflow").decoder == "tensorflow/decode-image"  # PNG too

    def formats(profile: str) -> set[str]:
        return {
            c.params["format"]
            for c in loader_cases(get_profile(profile))
            if c.library == "tf-data" and c.params.get("task") == "segmentation"
        }

    assert formats("full") == {"files", "tfrecord"}
    assert formats("default") == {"files", "tfrecord"}  # make bench: from PNG files and TFRecord
    assert formats("quick") == set()  # no task in quick


@pytest.mark.parametrize(
    ("key", "pool", "pids"),
    [
        ("keras-0-None", [1, False], 0),
        ("keras-2-threads", [2, False], 0),
        ("keras-2-processes", [2, True], 2),
    ],
)
def test_keras_crop_ocr_first_batch(
    probed: dict[str, Any], key: str, pool: list[Any], pids: int
) -> None:
    got = probed[key]
    assert got["check"] == "pass", got
    assert got["images"] == [[4, 32, 128, 3], "float32"]
    assert got["targets"] == [[4, 4, 50], "float32"]  # to_categorical per head, per batch
    assert got["pool"] == pool and got["pids"] == pids


def test_keras_tasks_sweep_threads_and_processes() -> None:
    from imgbench.loaders.cases import loader_cases
    from imgbench.profiles import get_profile

    def keras_tasks(profile: str, task: str) -> list[tuple[int, str | None]]:
        return [
            (c.params["workers"], c.params.get("method"))
            for c in loader_cases(get_profile(profile))
            if c.library == "keras-pydataset" and c.params.get("task") == task
        ]

    for task in ("crop-ocr", "segmentation"):
        full = keras_tasks("full", task)
        assert (0, None) in full and len(full) >= 3
        assert {m for _, m in full} == {None, "threads", "processes"}
    # make bench: segmentation at the DataLoader's task counts (0 inline, then threads and
    # processes at one per core), crop-ocr at one per core as the DataLoader's
    cores = os.cpu_count() or 2
    assert keras_tasks("default", "segmentation") == [
        (0, None),
        (cores, "threads"),
        (cores, "processes"),
    ]
    assert keras_tasks("default", "crop-ocr") == [(cores, "threads"), (cores, "processes")]
    assert keras_tasks("quick", "crop-ocr") == []


@pytest.mark.parametrize(
    ("key", "pool", "pids"),
    [("keras-segmentation", [2, True], 2), ("keras-segmentation-threads", [2, False], 0)],
)
def test_keras_segmentation_first_batch(
    probed: dict[str, Any], key: str, pool: list[Any], pids: int
) -> None:
    got = probed[key]  # Pillow's recipe in Keras's 2 processes (JPEG) or 2 threads (PNG)
    assert got["check"] == "pass", got
    assert got["images"] == [[4, 3, 224, 224], "float32"]
    assert got["targets"] == [[4, 224, 224], "int64"]
    assert got["pool"] == pool and got["pids"] == pids
    assert set(got["classes"]) <= set(range(N_CLASSES)) and len(got["classes"]) >= 2


# -- tf.data: decode_and_crop_jpeg, as TensorFlow's ResNet preprocessing --------------------------
@pytest.fixture(scope="module")
def tf_roi(tf_session: TensorflowSession) -> dict:
    """What the tensorflow env's probe found of the as-documented decode (tests/loaders/
    tf_tasks_probe.py, run on the real photos after that env's bench session)."""
    assert "probe_error" not in tf_session.probe, tf_session.probe["probe_error"]
    return {
        "roi": tf_session.probe["roi"],
        "bad": tf_session.probe["roi-bad"],
        "rows": tf_session.rows,
    }


def test_tf_decode_and_crop_of_a_forced_window_equals_decode_then_slice(tf_roi: dict) -> None:
    for mean_diff, shape in tf_roi["roi"]["forced"]:
        assert shape == [120, 150, 3]
        assert mean_diff < 0.5, mean_diff  # the window's edge upsamples chroma on its own


def test_tf_decode_and_crop_windows_follow_the_recipes_area_and_aspect(tf_roi: dict) -> None:
    windows = np.array(tf_roi["roi"]["windows"])
    sizes = [(int(w), int(h)) for w, h in windows[:16, 2:4]]
    check_window_distribution(windows[:, 0], windows[:, 1], sizes)


def test_tf_as_documented_first_batch_and_rows(tf_roi: dict) -> None:
    assert tf_roi["roi"]["check"] == "pass" and tf_roi["roi"]["op"] == "decode_and_crop_jpeg"
    rows = tf_roi["rows"]
    documented = rows[rows.configured_as == AS_DOCUMENTED]
    assert set(documented.library) == {"tf-data"} and len(documented) == 2  # files, TFRecord
    assert (documented.status == "ok").all(), documented.reason.tolist()
    assert (documented.crop_decode == ROI).all() and (documented.system == "tf.data").all()
    assert documented.configured_from.str.contains("decode_and_crop_jpeg").all()


def test_tf_as_documented_names_a_truncated_and_a_zero_byte_file(tf_roi: dict) -> None:
    for name, error in tf_roi["bad"].items():
        assert name in error, error
