"""Loaders streaming from the session's S3 server: the case matrix, and real sessions against a real
SeaweedFS server (started and stopped by the session, as `make bench` does; no mocks)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pandas as pd
import pytest

from imgbench.loaders.cases import loader_case, loader_cases
from imgbench.loaders.plan import LoaderPlan
from imgbench.objectstore.server import S3Server
from imgbench.profiles import get_profile
from tests.objectstore.conftest import needs_weed, run_s3_session

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "benches" / "bench_loaders.py"
PROFILE = """
[tool.imgbench.profiles.s3loaders]
base = "quick"
# the rows are checked, not timed: one round, none untimed (no warm-up or calibration rounds)
rounds = 1
warmup_rounds = 0
min_round_s = 0.0

[tool.imgbench.profiles.s3loaders.loader]
libraries = ["torch-dataloader"]
au_accelerators = [800]
s3_pipelines = {pipelines}
s3_workers = {workers}
s3_network_shapes = {shapes}
"""
# what the local DataLoader rows are called (batches_per_round 2 at 0 workers since the default
# thinned; a worker gets two): S3 rows must not change them, comparisons join on them
LOCAL_ID_0 = (
    "loader/torch-dataloader/files-opencv-albumentations[batch_size=32,batches_per_round=2,"
    "decoder=opencv/imdecode-rgb,format=files,pipeline=albumentations/numpy:train-classification,"
    "prefetch_factor=default,threads=1,workers=0]"
)
LOCAL_AU_ID_2 = (
    "loader/torch-dataloader/files-opencv-albumentations+au-sleep-200ips[accelerator_images_per_s"
    "=200,batch_size=32,batches_per_round=4,compute_kind=sleep,decoder=opencv/imdecode-rgb,"
    "format=files,persistent_workers=true,pin_memory=false,pipeline=albumentations/numpy:"
    "train-classification,prefetch_factor=2,start_method=fork,threads=1,workers=2]"
)


# -- the matrix ----------------------------------------------------------------------------------
def _s3(cases: list) -> list:  # type: ignore[type-arg]
    return [c for c in cases if c.params.get("storage") == "s3"]


def test_default_profile_sweeps_s3_tar_with_au_and_keeps_local_ids() -> None:
    default = get_profile("default")
    cases = loader_cases(default)
    s3 = _s3(cases)
    assert [c.params["workers"] for c in s3] == [0, 2]
    for case in s3:
        assert case.library == "torch-dataloader"
        assert case.params["format"] == "tar"
        assert case.params["accelerator_images_per_s"] == 200  # the plan's first speed
        assert case.variant == "tar-opencv-albumentations+s3+au-sleep-200ips"
        assert case.services == ("s3",)
        assert dict(case.columns) == {
            "storage": "s3",
            "network_shaping": "none",
            "task": "classification",
            **SAME_RECIPE_COLUMNS,
        }
        assert "network_shaping" not in case.params  # unshaped: no shape parameters
        assert {"webdataset", "boto3"} <= set(case.requires)
    # local cases: the ids they had, storage only as a row column, no service
    local = [c for c in cases if c not in s3]
    assert all("storage" not in c.params and not c.services for c in local)
    # (the copy-on-access experiment reads an index, not a store, and the gpu rows' feeds are
    # the DataLoader's own files: no storage column)
    readers = [c for c in local if c.library not in ("cow-experiment", "gpu")]
    assert {dict(c.columns)["storage"] for c in readers} == {"local"}
    ids = {c.case_id for c in local}
    assert LOCAL_ID_0 in ids and LOCAL_AU_ID_2 in ids
    # S3 rows add cases, they change none: without them the matrix is the local one
    plain = dataclasses.replace(default.plan(LoaderPlan), s3_pipelines=())
    without = loader_cases(dataclasses.replace(default, plans={**default.plans, "loader": plain}))
    assert [c.case_id for c in without] == [c.case_id for c in local]
    # the real-sample and allocator sessions, and quick, run none
    assert _s3(loader_cases(default.on_extra_dataset())) == []
    assert _s3(loader_cases(default.in_allocator_session())) == []
    assert _s3(loader_cases(get_profile("quick"))) == []


def test_full_profile_adds_a_50ms_path_with_its_own_ids() -> None:
    full = _s3(loader_cases(get_profile("full")))
    plan = get_profile("full").plan(LoaderPlan)
    shaped = [c for c in full if c.services != ("s3",)]
    assert len(shaped) == len(full) // 2 == len(plan.workers())
    for case in shaped:
        assert case.services == ("s3@rtt50ms-unlimited",)
        assert case.params["network_shaping"] == "rtt50ms-unlimited"
        assert case.params["network_rtt_target_ms"] == 50
        assert dict(case.columns) == {
            "storage": "s3",
            "network_shaping": "rtt50ms-unlimited",
            "task": "classification",
            **SAME_RECIPE_COLUMNS,
        }
        assert "+s3-rtt50ms-unlimited+" in case.variant
    assert {c.case_id for c in shaped}.isdisjoint(c.case_id for c in full if c not in shaped)


def test_s3_objects_pipeline_and_misuse() -> None:
    from imgbench.loaders.registry import pipeline_config

    plan = LoaderPlan(s3_pipelines=("s3-objects",), s3_workers=(2,))
    (case,) = _s3(loader_cases_for(plan))
    assert case.params["format"] == "folder" and case.variant.startswith("folder-opencv-")
    assert "boto3" in case.requires
    with pytest.raises(ValueError, match="reads local storage, not S3"):
        loader_cases_for(LoaderPlan(s3_pipelines=("lmdb",)))
    with pytest.raises(ValueError, match="a network shape is for S3 pipelines only"):
        loader_case("torch-dataloader", 0, plan=plan, network_shape="rtt5ms-unlimited")
    assert pipeline_config("s3-tar").label.startswith("s3:tar > ")


# what every same-recipe DataLoader row of the train recipe says of itself (loaders/documented.py)
SAME_RECIPE_COLUMNS = {
    "system": "DataLoader",
    "configured_as": "same-recipe",
    "configured_from": None,
    "crop_decode": "full",
}


def loader_cases_for(plan: LoaderPlan) -> list:  # type: ignore[type-arg]
    profile = get_profile("quick")
    return loader_cases(dataclasses.replace(profile, plans={**profile.plans, "loader": plan}))


# -- real sessions -------------------------------------------------------------------------------
def _run(
    out: Path,
    dataset: Path,
    *,
    pipelines: str = '["s3-tar"]',
    workers: str = "[0, 2]",
    shapes: str = '["rtt0ms-unlimited"]',
    env: dict[str, str] | None = None,
) -> tuple[pd.DataFrame, int]:
    """`pytest benches/bench_loaders.py -k s3` in a fresh session; the rows, and its exit code.
    Checks that its server, its data folder and its built stores are gone afterwards."""
    profile = PROFILE.format(pipelines=pipelines, workers=workers, shapes=shapes)
    return run_s3_session(
        out,
        BENCH,
        ("s3loaders", profile),
        [f"--dataset={dataset}", "-k", "s3"],
        env=env,
        timeout=400,
    )


@needs_weed
def test_dataloader_streams_tar_shards_and_objects_from_s3(
    tmp_path: Path, photo_dir: Path, s3_server: S3Server, s3_env: dict[str, str]
) -> None:
    """Both S3 pipelines at 0 and 2 workers, unshaped and through a 5 ms path: every row
    measured, its first batch checked, its network recorded, and nothing left running. On the
    test process's server ($IMGBENCH_S3_ENDPOINT; tests/objectstore/test_s3_bench.py tests a
    session's own)."""
    from imgbench.machine import dist_version

    frame, code = _run(
        tmp_path,
        photo_dir,
        pipelines='["s3-tar", "s3-objects"]',
        shapes='["rtt0ms-unlimited", "rtt5ms-unlimited"]',
        env=s3_env,
    )
    assert code == 0, frame[["test_id", "status", "reason"]].to_string()
    assert (frame["status"] == "ok").all(), frame["reason"].tolist()
    assert len(frame) == 8
    assert {(p["format"], p["workers"], p.get("network_shaping")) for p in frame["params"]} == {
        (f, w, s) for f in ("tar", "folder") for w in (0, 2) for s in (None, "rtt5ms-unlimited")
    }
    assert (frame["storage"] == "s3").all()
    assert all(p["storage"] == "s3" for p in frame["params"])
    assert (frame["images_per_s_median"] > 0).all()
    assert frame["cache_method"].str.startswith("n/a: every sample one GET").all()
    for _, row in frame.iterrows():
        extra = row["extra"]
        # the same first-batch check as every local loader row
        assert extra["first_batch_check"] == "pass", row["test_id"]
        assert extra["first_batch"]["shape"] == [8, 3, 224, 224]
        assert set(extra["first_batch"]["labels"]) <= {0, 1}
        assert "labels ints in [0, 1]" in extra["first_batch_expected"]
        assert 0 < extra["au"] <= 1 and extra["compute_s_per_batch"] == pytest.approx(0.01)
        assert extra["verified_records"] == 16  # the upload, round-tripped before any timing
        assert extra["s3_prefix"].startswith("stores/") and extra["stored_bytes"] > 0
        assert extra["workers_alive_after_close"] == []
        assert extra["stage_times_s"]["read"] > 0
        versions = extra["pipeline_versions"]
        assert versions["boto3"] == dist_version("boto3")
        if row["params"]["format"] == "tar":
            assert versions["webdataset"] == dist_version("webdataset")
    # the network: the server's own address, or the 5 ms path in front of it
    direct = frame[frame["network_shaping"] == "none"]
    shaped = frame[frame["network_shaping"] == "rtt5ms-unlimited"]
    assert len(direct) == len(shaped) == 4
    assert direct["storage_endpoint"].str.fullmatch(r"http://127\.0\.0\.1:\d+").all()
    assert set(direct["storage_endpoint"]) == {s3_server.endpoint.url}  # the shared one
    assert (direct["network_rtt_ms"] > 0).all() and (direct["network_rtt_ms"] < 4).all()
    assert (direct["extra"].map(lambda e: e["network_how"]) == "direct").all()
    assert (shaped["storage_endpoint"] != direct["storage_endpoint"].iloc[0]).all()
    assert (shaped["network_rtt_ms"] >= 4.5).all(), shaped["network_rtt_ms"].tolist()
    assert (shaped["extra"].map(lambda e: e["network_how"]) == "relay").all()
    assert set(shaped["case_id"]).isdisjoint(direct["case_id"])


def test_missing_server_skips_s3_loader_rows_with_the_reason(
    tmp_path: Path, photo_dir: Path
) -> None:
    frame, code = _run(
        tmp_path, photo_dir, workers="[0]", env={"IMGBENCH_WEED": "/nonexistent/weed"}
    )
    assert code == 0
    (row,) = frame.itertuples()
    assert row.status == "skipped"
    assert row.reason == "S3 server: $IMGBENCH_WEED=/nonexistent/weed is not an executable `weed`"
    assert row.storage == "s3" and row.network_shaping == "none"
    assert pd.isna(row.storage_endpoint)
