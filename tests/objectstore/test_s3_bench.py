"""`pytest benches/bench_formats.py` with S3 storage, as a user runs it: rows, faults, cleanup."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest

from imgbench.objectstore.server import S3Server
from imgbench.objectstore.shaping import leftovers, shape_named, shaping_unavailable_reason
from tests.objectstore.conftest import needs_weed, run_s3_session

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "benches" / "bench_formats.py"
PROFILE = """
[tool.imgbench.profiles.s3test]
base = "quick"
rounds = 2
warmup_rounds = 1

[tool.imgbench.profiles.s3test.format]
libraries = {libraries}
storages = {storages}
orders = {orders}
caches = ["warm"]
payloads = ["bytes"]
raw_ceiling = false
network_shapes = {shapes}
"""


def _run(
    out: Path,
    dataset: Path,
    *args: str,
    libraries: str = '["folder", "parquet"]',
    storages: str = '["s3"]',
    orders: str = '["sequential", "shuffled"]',
    shapes: str = '["rtt0ms-unlimited"]',
    env: dict[str, str] | None = None,
) -> tuple[pd.DataFrame, int]:
    profile = PROFILE.format(libraries=libraries, storages=storages, orders=orders, shapes=shapes)
    return run_s3_session(
        out, BENCH, ("s3test", profile), [f"--dataset={dataset}", *args], env=env, timeout=300
    )


UNSHAPEABLE = "rtt5ms-unlimited"  # forced unavailable by tests.objectstore.unshapeable


@dataclass(frozen=True)
class SharedServerRun:
    """The one session on the test process's server: its rows, exit code and folders."""

    frame: pd.DataFrame
    code: int
    slow: str  # the shaped path it measured (50 ms, with a bandwidth cap where one can be set)
    pid_file: Path


@pytest.fixture(scope="module")
def shared_server_run(
    tmp_path_factory: pytest.TempPathFactory,
    tiny_dataset: Path,
    s3_server: S3Server,
    s3_env: dict[str, str],
) -> SharedServerRun:
    """One session on the test process's server ($IMGBENCH_S3_ENDPOINT) for the rows test and the
    network-shape test (two sessions before): folder and parquet, both orders, unshaped; and
    folder's upload and sequential read through a 50 ms path and at a shape that cannot be set
    up. The other shaped cases of that matrix are deselected (each 50 ms read only waits)."""
    if shaping_unavailable_reason(shape_named("rtt50ms-100mbit")) is None:
        slow = "rtt50ms-100mbit"
    else:  # a bandwidth cap needs root, ip and tc; without them the 50 ms path is the relay alone
        slow = "rtt50ms-unlimited"
    out = tmp_path_factory.mktemp("s3-shared-server")
    pid_file = out / "pid"
    run = out / "run"
    run.mkdir()
    frame, code = _run(
        run,
        tiny_dataset,
        "-p",
        "tests.objectstore.unshapeable",
        "-k",
        "not (rtt and (parquet or shuffled))",
        shapes=f'["rtt0ms-unlimited", "{slow}", "{UNSHAPEABLE}"]',
        env={
            **s3_env,
            "IMGBENCH_TEST_UNSHAPEABLE": UNSHAPEABLE,
            "IMGBENCH_TEST_PID_FILE": str(pid_file),
        },
    )
    return SharedServerRun(frame, code, slow, pid_file)


@needs_weed
def test_s3_rows_measure_upload_size_first_sample_and_both_orders(
    shared_server_run: SharedServerRun, s3_server: S3Server
) -> None:
    """On the test process's server ($IMGBENCH_S3_ENDPOINT): a session's own server starts,
    is lost and stops in the tests below. The unshaped rows of the shared session."""
    everything, code = shared_server_run.frame, shared_server_run.code
    assert code == 0, everything[["case_id", "reason"]].to_string()
    frame = everything[everything["network_shaping"] == "none"]
    assert len(frame) == 6  # 2 uploads, 4 reads: no shape parameter in their cases
    assert not any("network_shaping" in p for p in frame["params"])
    assert set(frame["storage_endpoint"]) == {s3_server.endpoint.url}  # none of its own
    assert (frame["status"] == "ok").all(), frame["reason"].tolist()
    assert set(everything["storage"]) == {"s3"}
    assert frame["storage_endpoint"].str.fullmatch(r"http://127\.0\.0\.1:\d+").all()
    assert frame["storage_endpoint"].nunique() == 1  # one server for the whole session
    assert (frame["network_rtt_ms"] > 0).all()
    # two clients, boto3 and pyarrow.fs (every S3 reader is round-tripped in test_s3_formats;
    # a litdata case takes ~6 s here, mostly constructing StreamingDataset, ~1.1 s per round)
    formats = {"folder", "parquet"}
    uploads = frame[frame["mode"] == "upload"]
    assert set(uploads["extra"].map(lambda e: e["format"])) == formats
    for extra in uploads["extra"]:
        assert extra["upload_s"] > 0 and extra["stored_bytes"] > 0
        assert extra["verified_records"] == extra["records"] == 10
    reads = frame[frame["mode"] == "read"]
    assert {(e["format"], e["order"]) for e in reads["extra"]} == {
        (f, o) for f in formats for o in ("sequential", "shuffled")
    }
    assert (reads["images_per_s_median"] > 0).all()
    assert (reads["round_repeats"] == 1).all()  # one pass: every round reads the server
    for extra in reads["extra"]:
        assert extra["verified_records"] == extra["records"] == 10  # before any timing
        assert extra["time_to_first_sample_s"] > 0
        assert extra["upload_s"] > 0 and extra["stored_bytes"] >= extra["source_bytes"] * 0.9
    assert set(reads["cache_state"]) == {"n/a"}


@needs_weed
def test_a_server_lost_mid_session_fails_the_rest_and_keeps_the_rows(
    tmp_path: Path, tiny_dataset: Path
) -> None:
    killed = tmp_path / "killed-pid"
    frame, code = _run(
        tmp_path,
        tiny_dataset,
        "-p",
        "tests.objectstore.kill_server",
        "--imgbench-process=worker",  # the manager's own server-loss reason, from its worker
        libraries='["folder"]',
        env={"IMGBENCH_TEST_KILL_S3_AFTER": "1", "IMGBENCH_TEST_KILLED_FILE": str(killed)},
    )
    assert code == 1  # some cases failed: rows say which
    pid = killed.read_text()
    assert list(frame["mode"]) == ["upload", "read", "read"]
    assert list(frame["status"]) == ["ok", "failed", "failed"]
    assert frame["extra"][0]["upload_s"] > 0  # the finished row is kept, with its figures
    for reason in frame["reason"][1:]:
        assert "S3 server lost: SeaweedFS (weed pid " + pid in reason
        assert "was killed by SIGKILL during the session" in reason
        assert "\n" not in reason
    assert frame["storage_endpoint"].notna().all()


def test_missing_weed_skips_s3_cases_with_the_reason(tmp_path: Path, tiny_dataset: Path) -> None:
    """(Local rows beside them are measured as ever: tests/formats/test_bench_e2e.py.)"""
    frame, code = _run(
        tmp_path,
        tiny_dataset,
        libraries='["folder", "parquet"]',
        orders='["sequential"]',
        env={"IMGBENCH_WEED": "/nonexistent/weed"},
    )
    assert code == 0
    assert len(frame) == 4 and (frame["status"] == "skipped").all()
    assert set(frame["storage"]) == {"s3"}
    assert frame["storage_endpoint"].isna().all()
    reason = "S3 server: $IMGBENCH_WEED=/nonexistent/weed is not an executable `weed`"
    assert (frame["reason"] == reason).all(), frame["reason"].tolist()


def test_a_server_that_crashes_at_start_fails_every_s3_case_with_the_reason(
    tmp_path: Path, tiny_dataset: Path
) -> None:
    fake = tmp_path / "weed"
    fake.write_text("#!/bin/sh\necho 'F1123 filer: cannot open the store' >&2\nexit 3\n")
    fake.chmod(0o755)
    out = tmp_path / "run"
    out.mkdir()
    frame, code = _run(
        out,
        tiny_dataset,
        libraries='["folder", "parquet"]',
        orders='["sequential"]',
        env={"IMGBENCH_WEED": str(fake)},
    )
    assert code == 1
    assert len(frame) == 4 and (frame["status"] == "failed").all()
    for reason in frame["reason"]:  # started once, not retried: the same reason for every case
        assert "S3 server: SeaweedFS (weed pid " in reason
        assert "exited with code 3 during start-up: F1123 filer: cannot open the store" in reason
        assert "\n" not in reason
    assert frame["reason"].str.extract(r"pid (\d+)")[0].nunique() == 1


@needs_weed
def test_network_shape_is_a_dimension_of_s3_rows(
    shared_server_run: SharedServerRun, s3_server: S3Server
) -> None:
    """The same read unshaped, through a 50 ms path, and at a shape that cannot be set up; on
    the test process's server (a shaped path is set up in front of whichever server). The shared
    session's folder rows, sequential."""
    import psutil

    slow, pid_file = shared_server_run.slow, shared_server_run.pid_file
    everything, code = shared_server_run.frame, shared_server_run.code
    assert code == 0, everything[["case_id", "status", "reason"]].to_string()
    frame = everything[
        everything["params"].map(lambda p: (p["format"], p["order"]) == ("folder", "sequential"))
    ]
    by_shape = {shape: rows for shape, rows in frame.groupby("network_shaping")}
    assert set(by_shape) == {"none", slow, UNSHAPEABLE}
    for rows in by_shape.values():
        assert sorted(rows["mode"]) == ["read", "upload"]
    # unshaped: the case ids S3 rows always had, the server's own address
    direct = by_shape["none"]
    assert (direct["status"] == "ok").all(), direct["reason"].tolist()
    assert not any("network_shaping" in p for p in direct["params"])
    assert (direct["extra"].map(lambda e: e["network_how"]) == "direct").all()
    server = direct["storage_endpoint"].iloc[0]
    assert server == s3_server.endpoint.url
    # shaped: its own id, another address (the relay), a measured round trip of >= 50 ms
    shaped = by_shape[slow]
    assert (shaped["status"] == "ok").all(), shaped["reason"].tolist()
    assert set(shaped["case_id"]).isdisjoint(direct["case_id"])
    assert all(p["network_shaping"] == slow for p in shaped["params"])
    assert (shaped["storage_endpoint"] != server).all()
    assert (shaped["network_rtt_ms"] >= 45).all(), shaped["network_rtt_ms"].tolist()
    assert (direct["network_rtt_ms"] < 45).all()
    for extra in shaped["extra"]:
        assert extra["network_how"] in ("relay", "netns+tbf+relay")
        assert extra["network_relay_added_ms"] is not None
    (read,) = shaped.loc[shaped["mode"] == "read", "extra"]
    assert read["time_to_first_sample_s"] >= 0.05  # its requests crossed the shaped path
    # a shape that cannot be set up: skipped rows with the one-line reason
    skipped = by_shape[UNSHAPEABLE]
    assert (skipped["status"] == "skipped").all()
    reason = f"network shaping {UNSHAPEABLE} unavailable: the kernel has no tbf qdisc (forced by the test)"
    assert (skipped["reason"] == reason).all(), skipped["reason"].tolist()
    # nothing left: no namespace or link of the session, no relay in front of its server
    assert leftovers(int(pid_file.read_text())) == []
    port = server.rsplit(":", 1)[1]
    relays = [
        p.info["pid"]
        for p in psutil.process_iter(["pid", "cmdline"])
        if any(f"127.0.0.1:{port}" == part for part in (p.info.get("cmdline") or []))
    ]
    assert relays == []
