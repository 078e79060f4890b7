"""Mosaic Streaming (MDS), for real, in the mosaic environment: a store written by MDSWriter,
round-tripped, read map-style and in order, uploaded to a real S3 server and read back with
StreamingDataset; the benchmark session's rows; and the skipped rows where the env is missing.

`make test` builds the env (`make mosaic-env`, `imgbench env create mosaic`: streaming and what
the main env lacks, layered over the main env, about 200 MB and a minute); where it is missing
(its build failed) the tests that need it skip with that command as the reason. The env's
session and the store's round trips run in one interpreter of the env
(tests/formats/mosaic_session.py, read by tests/envs/test_envs.py too).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from imgbench.objectstore.server import S3Server
from tests.conftest import run_pytest
from tests.formats.mosaic_session import BENCH, MosaicRun, bench, mosaic_run, read_rows
from tests.formats.photos import photo_count
from tests.objectstore.conftest import needs_weed, weed_processes


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory, s3_env: dict[str, str]) -> MosaicRun:
    """The mosaic env's session (its process measures: no worker server to start in the env)
    on the test process's S3 server, the probe's checks after its cases; it must pass and
    leave no server, build folder, file lock or shared memory behind."""
    run = mosaic_run(tmp_path_factory, s3_env)
    assert run.returncode == 0, run.output
    assert run.weed_left == [], "an S3 server outlived the session"
    assert run.scratch_left == []
    # streaming's file locks (TMPDIR) and shared memory are freed by the readers' close()
    assert run.filelocks_left == []  # (torch leaves torchinductor_*)
    assert run.shm_left == []
    return run


@needs_weed
def test_mds_store_round_trips_locally_and_from_s3(session: MosaicRun) -> None:
    """Written by MDSWriter, every record back by index and in order, then the same store
    uploaded to a real SeaweedFS server (the test process's, as the session's) and read back by
    StreamingDataset(remote=s3://...)."""
    out: dict[str, Any] = session.probe.get("store", {})
    assert "error" not in out and out, out.get("error", session.output)
    count = photo_count(session.dataset)
    assert out["reason"] is None
    assert "index.json" in out["files"] and "shard.00000.mds" in out["files"]
    assert out["round_trip"][:2] == [True, count], out["round_trip"]
    assert out["len"] == count and all(out["map_style"]) and len(out["map_style"]) == count
    assert out["sequential"] == [True] * count
    assert out["labels"] == out["expected_labels"] and out["last_label"] == out["labels"][-1]
    assert out["index_error"] is True
    assert out["upload"][0] == len(out["files"]) - 1 and out["upload"][2]  # minus _imgbench/
    assert out["s3_round_trip"][:2] == [True, count]
    assert out["s3_env_while_open"] and out["s3_shuffled"]
    assert "index.json" in out["cache_files"] and "shard.00000.mds" in out["cache_files"]
    assert out["s3_sequential"] == [True] * count
    assert out["cache_left"] == [] and out["env_restored"]
    assert out["deleted"] == out["upload"][0] + 2  # + imgbench's key list and marker


@needs_weed
def test_mds_cases_in_the_mosaic_session(session: MosaicRun, s3_server: S3Server) -> None:
    """The mosaic env's session measures MDS locally (write, warm and cold reads) and on S3
    (upload, sequential and shuffled reads), each verified record by record before timing; on
    the test process's S3 server."""
    rows = session.rows()
    count = photo_count(session.dataset)
    assert (rows.status == "ok").all(), rows[["test_id", "status", "reason"]].to_string()
    assert set(rows.environment) == {"mosaic"} and set(rows.library) == {"mosaic-streaming"}
    assert rows.library_version.str.match(r"0\.13\.").all()
    # the env's own distribution (importlib.metadata there): what the rows must name
    installed = session.probe["facts"]["mosaicml-streaming"]
    assert set(rows.library_version) == {installed}
    kinds = {
        (storage, p["mode"], p["order"], p["cache_state"])
        for storage, p in zip(rows.storage, rows.params, strict=True)
    }
    assert kinds == {
        ("local", "write", "sequential", "warm"),
        ("local", "read", "sequential", "warm"),
        ("local", "read", "shuffled", "warm"),
        ("local", "read", "sequential", "cold"),
        ("local", "read", "shuffled", "cold"),
        ("s3", "upload", "sequential", "warm"),
        ("s3", "read", "sequential", "n/a"),
        ("s3", "read", "shuffled", "n/a"),
    }
    # every record of the store compared with its source before timing (the profile's first 16
    # images, less any the dataset scan left out)
    assert rows.extra.map(lambda e: e["verified_records"] == e["records"] > 8).all()
    assert rows.extra.map(lambda e: e["records"] <= min(16, count)).all()
    assert (rows.images_per_s_median > 0).all()
    assert set(rows.storage_endpoint[rows.storage == "s3"]) == {session.endpoint_url}
    assert session.endpoint_url == s3_server.endpoint.url
    s3_reads = rows[(rows.storage == "s3") & rows.params.map(lambda p: p["mode"] == "read")]
    for extra in s3_reads.extra:
        assert extra["time_to_first_sample_s"] > 0 and extra["upload_s"] > 0
        assert extra["stored_bytes"] >= extra["source_bytes"]
        assert extra["s3_client"].startswith("streaming StreamingDataset")


def test_missing_mosaic_env_gives_skipped_rows_with_the_reason(
    tiny_dataset: Path, tmp_path: Path
) -> None:
    """From the main env, with no mosaic env built and a profile whose `imgbench run` would not
    build it, the MDS cases are rows that say how to build it (not silently dropped)."""
    proc, scratch, tmp = bench(
        tmp_path, sys.executable, f"--dataset={tiny_dataset}", mark_root=True
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-3000:]
    assert weed_processes(str(tmp)) == [] and list(scratch.iterdir()) == []
    rows = read_rows(tmp_path / "results")
    assert len(rows) == 8
    assert (rows.status == "skipped").all()
    assert set(rows.environment) == {"mosaic"}
    assert set(rows.reason) == {"mosaic env not built: `imgbench env create mosaic`"}


def test_a_profile_that_runs_the_mosaic_env_leaves_its_cases_to_that_session(
    tiny_dataset: Path, tmp_path: Path
) -> None:
    """`full` lists the mosaic env: `imgbench run` builds it and runs its session, so the main
    session neither measures the MDS cases nor writes rows for them."""
    proc = run_pytest(
        [
            str(BENCH),
            f"--dataset={tiny_dataset}",
            f"--imgbench-results={tmp_path / 'results'}",
            "--imgbench-profile=full",
            "--collect-only",
            "-q",
        ],
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "format-local" in proc.stdout or "test_format[" in proc.stdout  # cases were collected
    assert "mosaic-streaming" not in proc.stdout
