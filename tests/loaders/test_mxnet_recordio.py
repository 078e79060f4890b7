"""MXNet's ImageRecordIter (the mxnet-recordio loader), run for real in the mxnet env: the rows of
a bench session there, its first batch through the loader checks, bad files named without a hang
(tests/loaders/mxnet_probe.py, in the same session).

The env is built by `make test` and `make bench` (`imgbench env create mxnet`); where it is
missing the tests that need it skip with that command as the reason.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from imgbench.augment import spec
from imgbench.loaders.cases import loader_cases
from imgbench.loaders.libs.mxnet_recordio import content_kind, recipe_options, truncated_jpeg
from imgbench.loaders.plan import LoaderPlan
from imgbench.paths import repo_root
from imgbench.profiles import get_profile
from tests.envs.env_sessions import env_python

ROOT = repo_root()
BENCHES = Path(__file__).resolve().parents[2] / "benches"


def _python() -> Path:
    return env_python("mxnet")


def test_the_default_profile_sweeps_preprocess_threads_with_an_au_row() -> None:
    profile = get_profile("default")
    plan = profile.plan(LoaderPlan)
    cases = [c for c in loader_cases(profile) if c.library == "mxnet-recordio"]
    assert "mxnet" in profile.environments
    assert {c.environment for c in cases} == {"mxnet"}
    assert {(c.params["format"], c.params["decoder"]) for c in cases} == {
        ("recordio", "mxnet/imdecode")
    }
    steady = [c.params["workers"] for c in cases if "accelerator_images_per_s" not in c.params]
    au = [c for c in cases if "accelerator_images_per_s" in c.params]
    assert tuple(steady) == plan.thread_sweep and len(au) == 1


def test_recipe_options_follow_the_augment_spec() -> None:
    options = recipe_options()
    assert options["data_shape"] == (3, spec.SIZE, spec.SIZE) and options["random_resized_crop"]
    assert (options["min_random_area"], options["max_random_area"]) == spec.RRC_SCALE
    assert (options["min_aspect_ratio"], options["max_aspect_ratio"]) == spec.RRC_RATIO
    assert options["brightness"] == options["contrast"] == options["saturation"] == 0.4
    assert options["random_h"] == 18 and options["rand_mirror"]  # 36 degrees of OpenCV's 180
    assert options["mean_r"] == pytest.approx(123.675) and options["std_b"] == pytest.approx(57.375)


def test_a_jpeg_cut_short_and_the_content_kind_are_told() -> None:
    from tests.readers.images import photo_bytes

    jpeg = photo_bytes("coffee", "jpeg")
    assert not truncated_jpeg(jpeg) and truncated_jpeg(jpeg[: len(jpeg) // 2])
    assert not truncated_jpeg(jpeg + b"trailing bytes")  # data after the marker is not a cut
    assert content_kind(jpeg) == "JPEG" and content_kind(photo_bytes("coffee", "png")) == "PNG"
    assert content_kind(b"") is None


def _bad_files(folder: Path) -> Path:
    """A truncated JPEG, a zero-byte file, text and a PNG, each named .jpg, in a class folder."""
    from tests.readers.images import photo_bytes

    jpeg = photo_bytes("coffee", "jpeg")
    bad = folder / "class_1"
    bad.mkdir(parents=True)
    (bad / "truncated.jpg").write_bytes(jpeg[: len(jpeg) // 2])
    (bad / "empty.jpg").write_bytes(b"")
    (bad / "text.jpg").write_bytes(b"this is not an image")
    (bad / "really-a-png.jpg").write_bytes(photo_bytes("coffee", "png"))
    return bad


@pytest.fixture(scope="module")
def mx_session(
    tmp_path_factory: pytest.TempPathFactory, photo_dir_48: Path, photo_dir: Path
) -> dict[str, Any]:
    """The env's one bench session: its rows, then the bad-files probe
    (tests/loaders/mxnet_probe.py) in the same interpreter once the cases are done."""
    python = _python()
    out = tmp_path_factory.mktemp("mxnet-loaders")
    probe_file = out / "probe.json"
    proc = subprocess.run(
        [
            str(python),
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-p",
            "tests.loaders.mxnet_probe",
            str(BENCHES / "bench_loaders.py"),
            "--imgbench-env=mxnet",
            "--imgbench-profile=default",
            # the profile's loader rows are 5 rounds after a warm-up and calibration rounds:
            # checked here, not timed (one round each; min_round_s=0: no calibration rounds)
            "--imgbench-rounds=1",
            "--imgbench-set=warmup_rounds=0",
            "--imgbench-set=min_round_s=0",
            "--imgbench-process=in-process",  # correctness: no worker server to start in the env
            f"--dataset={photo_dir_48}",  # the default profile's batches are 32
            f"--imgbench-results={out / 'results'}",
            "-k",
            "mxnet-recordio and not au",  # the AU row is planned (above), not run again here
        ],
        cwd=out,
        env={
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
            "IMGBENCH_TEST_MX_PHOTOS": str(photo_dir),
            "IMGBENCH_TEST_MX_BAD": str(_bad_files(out / "bad")),
            "IMGBENCH_TEST_MX_PROBE": str(probe_file),
        },
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (parquet,) = (out / "results").glob("*.parquet")
    return {"rows": pd.read_parquet(parquet), "probe": json.loads(probe_file.read_text())}


@pytest.fixture(scope="module")
def mx_rows(mx_session: dict[str, Any]) -> pd.DataFrame:
    rows: pd.DataFrame = mx_session["rows"]
    return rows


def test_rows_are_ok_and_their_first_batch_passes_the_checks(mx_rows: pd.DataFrame) -> None:
    assert (mx_rows.status == "ok").all(), mx_rows.reason.tolist()
    assert (mx_rows.environment == "mxnet").all() and (mx_rows.library == "mxnet-recordio").all()
    assert tuple(sorted(mx_rows.workers)) == get_profile("default").plan(LoaderPlan).thread_sweep
    assert (mx_rows.images_per_s_median > 0).all()
    for _, row in mx_rows.iterrows():
        extra = json.loads(row.extra_json)
        assert extra["first_batch_check"] == "pass", row.test_id
        assert extra["first_batch"]["shape"] == [32, 3, 224, 224]
        assert extra["first_batch"]["labels"] == [0, 1]
        assert extra["preprocess_threads"] == row.workers
        versions = extra["pipeline_versions"]
        assert versions["mxnet"] == "1.9.1" and versions["numpy"] == "1.23.5"
        assert "torch" not in versions  # no torch in that environment


def test_the_rec_is_written_by_mxnet_and_removed(mx_rows: pd.DataFrame) -> None:
    extra = json.loads(mx_rows.extra_json.iloc[0])
    assert extra["recordio_written_by"].startswith("mx.recordio.MXIndexedRecordIO")
    assert extra["recordio_records"] == 32 and extra["recordio_bytes"] > 32 * 1000
    assert extra["recordio_skipped"] == [] and extra["recordio_write_s"] > 0
    assert not Path(extra["recordio_dir"]).exists()
    assert extra["workers_left_after_reap"] == []


def test_bad_files_are_named_and_left_out_without_a_hang(mx_session: dict[str, Any]) -> None:
    """Sixteen photos and four bad files (_bad_files), through the loader in the env's session."""
    result = mx_session["probe"]
    assert "probe_error" not in result, result["probe_error"]
    assert result["check"] == "pass"
    names = sorted(Path(item.split(": ", 1)[0]).name for item in result["skipped"])
    assert names == ["empty.jpg", "text.jpg", "truncated.jpg"], result["skipped"]
    reasons = " ".join(result["skipped"])
    assert "zero-byte file" in reasons and "truncated JPEG" in reasons
    assert "cannot decode it" in reasons
    assert result["records"] == 17  # the 16 photos and the PNG, decoded by its content
    assert [Path(item.split(": ")[0]).name for item in result["by_content"]] == ["really-a-png.jpg"]
    assert "fewer than one batch" in result["all_bad"]
    assert all(name in result["all_bad"] for name in names), result["all_bad"]
    assert "left out" in result["stderr"]  # the skipped files are named on stderr too
