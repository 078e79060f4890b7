"""Mosaic Streaming (MDS), for real, in the mosaic environment: a store written by MDSWriter,
round-tripped, read map-style and in order, uploaded to a real S3 server and read back with
StreamingDataset; the benchmark session's rows; and the skipped rows where the env is missing.

`make test` builds the env (`make mosaic-env`, `imgbench env create mosaic`: streaming and what
the main env lacks, layered over the main env, about 200 MB and a minute); where it is missing
(its build failed) the tests that need it skip with that command as the reason.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from imgbench.envs import env_dir
from imgbench.objectstore.server import S3Server
from imgbench.paths import repo_root
from tests.conftest import run_pytest
from tests.objectstore.conftest import needs_weed, weed_processes

ROOT = repo_root()
REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "benches" / "bench_formats.py"
SHM_NAME = re.compile(
    r"^\d{6}_(locals|barrier|next_epoch|cache_usage|shard_states|shard_access_times|resume"
    r"|epoch_shape|epoch_data)$"
)

PROFILE = """
[tool.imgbench.profiles.mdstest]
base = "quick"
rounds = 2
warmup_rounds = 1

[tool.imgbench.profiles.mdstest.format]
libraries = ["mds"]
storages = ["local", "s3"]
orders = ["sequential", "shuffled"]
caches = ["warm", "cold"]
payloads = ["bytes"]
raw_ceiling = false
"""


def _mosaic_python() -> Path:
    assert ROOT is not None
    python = env_dir("mosaic", ROOT) / "bin" / "python"
    if not python.exists():
        pytest.skip(
            "mosaic env not built here (`imgbench env create mosaic`; make mosaic-env builds it)"
        )
    return python


def _streaming_shm() -> set[str]:
    return {p.name for p in Path("/dev/shm").iterdir() if SHM_NAME.match(p.name)}


CHECKS = r"""
import json, os, sys
from pathlib import Path
from imgbench.datasets.scan import scan
from imgbench.formats.base import build_format, open_format
from imgbench.formats.registry import get_format, get_s3_format
from imgbench.formats.roundtrip import round_trip
from imgbench.formats.s3 import delete_prefix, open_s3, s3_round_trip, upload_store
from imgbench.objectstore.server import external_endpoint

dataset, work = Path(sys.argv[1]), Path(sys.argv[2])
manifest = scan(dataset, use_cache=False)
entries = manifest.entries
spec = get_format("mds")
out = {"reason": spec.unmet_requirement()}
report = build_format(spec, manifest.root, entries, work / "mds", progress=False)
out["files"] = sorted(p.name for p in report.path.iterdir())
trip = round_trip(spec, report.path, manifest.root, entries)
out["round_trip"] = [trip.ok, trip.records, trip.reason()]
sources = [(manifest.root / e.path).read_bytes() for e in entries]
with open_format(spec, report.path) as reader:
    out["len"] = len(reader)
    out["map_style"] = [reader[i][0] == sources[i] for i in reversed(range(len(reader)))]
    out["last_label"] = reader[-1][1]
    classes = sorted({e.label for e in entries})
    out["expected_labels"] = [classes.index(e.label) for e in entries]
    out["sequential"] = [data == sources[i] for i, (data, _) in enumerate(reader)]
    out["labels"] = [label for _, label in reader]
    it = iter(reader)
    next(it)
    it.close()  # stopped early: its threads stop with it
    try:
        reader[len(reader)]
        out["index_error"] = False
    except IndexError:
        out["index_error"] = True
endpoint = external_endpoint()  # the test process's server ($IMGBENCH_S3_ENDPOINT)
s3 = get_s3_format("mds")
upload = upload_store(endpoint, report.path, "mds-round-trip-test/mds", report.meta)
out["upload"] = [upload.objects, upload.stored_bytes, upload.seconds > 0]
cache = work / "cache"
cache.mkdir()
verdict = s3_round_trip(s3, endpoint, upload.prefix, manifest.root, entries, [], cache)
out["s3_round_trip"] = [verdict.ok, verdict.records, verdict.reason()]
before = {k: os.environ.get(k) for k in ("S3_ENDPOINT_URL", "AWS_ACCESS_KEY_ID")}
with open_s3(s3, endpoint, upload.prefix, cache) as reader:
    out["s3_env_while_open"] = os.environ.get("S3_ENDPOINT_URL") == endpoint.url
    out["s3_shuffled"] = reader[5][0] == sources[5]
    out["cache_files"] = sorted(p.name for p in next(cache.iterdir()).iterdir())
    reader.drop_cache()  # every round starts empty: the next read downloads again
    out["s3_sequential"] = [data == sources[i] for i, (data, _) in enumerate(reader)]
out["cache_left"] = [p.name for p in cache.iterdir()]
out["env_restored"] = before == {k: os.environ.get(k) for k in before}
out["deleted"] = delete_prefix(endpoint, upload.prefix)
print("RESULT " + json.dumps(out))
"""


def _photo_count(photo_dir: Path) -> int:
    """The photos in the shared folder; not the manifest cache another test's scan writes there
    (``.imgbench-manifest.parquet``: counting it made the expected count one too many)."""
    return len([p for p in photo_dir.rglob("*") if p.is_file() and not p.name.startswith(".")])


@needs_weed
def test_mds_store_round_trips_locally_and_from_s3(
    photo_dir: Path, tmp_path: Path, s3_env: dict[str, str]
) -> None:
    """Written by MDSWriter, every record back by index and in order, then the same store
    uploaded to a real SeaweedFS server (the test process's, as the session's below: no second
    server start) and read back by StreamingDataset(remote=s3://...)."""
    python = _mosaic_python()
    (tmp_path / "tmp").mkdir()
    shm_before = _streaming_shm()
    proc = subprocess.run(
        [str(python), "-c", CHECKS, str(photo_dir), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, "TMPDIR": str(tmp_path / "tmp"), **s3_env},
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (line,) = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")]
    out = json.loads(line.removeprefix("RESULT "))
    count = _photo_count(photo_dir)
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
    # streaming's file locks (TMPDIR) and shared memory are freed by the readers' close()
    assert list((tmp_path / "tmp").glob("*_filelock")) == []  # (torch leaves torchinductor_*)
    assert _streaming_shm() <= shm_before


def _bench(
    out: Path,
    python: str,
    *extra: str,
    mark_root: bool = False,
    env_extra: dict[str, str] | None = None,
) -> pd.DataFrame:
    """bench_formats.py with the ``mdstest`` profile, as `imgbench run` starts a session."""
    (out / "pyproject.toml").write_text(PROFILE)
    if mark_root:  # this folder is the checkout: no .venvs/mosaic here
        (out / "benches").mkdir()
    scratch, tmp = out / "scratch", out / "tmp"
    scratch.mkdir()
    tmp.mkdir()
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
        "IMGBENCH_FORMATS_DIR": str(scratch),
        "TMPDIR": str(tmp),
        **(env_extra or {}),
    }
    proc = subprocess.run(
        [
            python,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            str(BENCH),
            f"--imgbench-results={out / 'results'}",
            "--imgbench-profile=mdstest",
            "--imgbench-host-gate=0",  # correctness, not timing: no re-timed rounds
            *extra,
        ],
        cwd=out,
        capture_output=True,
        text=True,
        timeout=420,
        check=False,
        env=env,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-3000:]
    assert weed_processes(str(tmp)) == [], "an S3 server outlived the session"
    assert list(scratch.iterdir()) == []
    (parquet,) = (out / "results").glob("*.parquet")
    frame = pd.read_parquet(parquet)
    frame["extra"] = frame["extra_json"].map(lambda s: json.loads(s) if isinstance(s, str) else {})
    frame["params"] = frame["params_json"].map(json.loads)
    return frame


@needs_weed
def test_mds_cases_in_the_mosaic_session(
    photo_dir: Path, tmp_path: Path, s3_server: S3Server, s3_env: dict[str, str]
) -> None:
    """The mosaic env's session measures MDS locally (write, warm and cold reads) and on S3
    (upload, sequential and shuffled reads), each verified record by record before timing; on
    the test process's S3 server."""
    python = _mosaic_python()
    shm_before = _streaming_shm()
    rows = _bench(
        tmp_path,
        str(python),
        f"--dataset={photo_dir}",
        "--imgbench-env=mosaic",
        "--imgbench-process=in-process",  # correctness: no worker server to start in the env
        env_extra=s3_env,
    )
    count = _photo_count(photo_dir)
    assert (rows.status == "ok").all(), rows[["test_id", "status", "reason"]].to_string()
    assert set(rows.environment) == {"mosaic"} and set(rows.library) == {"mosaic-streaming"}
    assert rows.library_version.str.match(r"0\.13\.").all()
    installed = subprocess.run(  # the env's own distribution: what the rows must name
        [
            str(python),
            "-c",
            "import importlib.metadata as m; print(m.version('mosaicml-streaming'))",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
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
    assert set(rows.storage_endpoint[rows.storage == "s3"]) == {s3_server.endpoint.url}
    s3_reads = rows[(rows.storage == "s3") & rows.params.map(lambda p: p["mode"] == "read")]
    for extra in s3_reads.extra:
        assert extra["time_to_first_sample_s"] > 0 and extra["upload_s"] > 0
        assert extra["stored_bytes"] >= extra["source_bytes"]
        assert extra["s3_client"].startswith("streaming StreamingDataset")
    assert list((tmp_path / "tmp").glob("*_filelock")) == []
    assert _streaming_shm() <= shm_before


def test_missing_mosaic_env_gives_skipped_rows_with_the_reason(
    tiny_dataset: Path, tmp_path: Path
) -> None:
    """From the main env, with no mosaic env built and a profile whose `imgbench run` would not
    build it, the MDS cases are rows that say how to build it (not silently dropped)."""
    rows = _bench(tmp_path, sys.executable, f"--dataset={tiny_dataset}", mark_root=True)
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
