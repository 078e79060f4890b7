"""`pytest benches/bench_formats.py` in a subprocess, as a user runs it, into parquet rows."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import run_pytest
from tests.shared_runs import SessionRun

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "benches" / "bench_formats.py"


def _run(out: Path, dataset: Path, *args: str) -> pd.DataFrame:
    """Formats are built under ``out/scratch``, which must be empty again when pytest exits."""
    scratch = out / "scratch"
    scratch.mkdir()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PYTHONPATH", os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
        patch.setenv("IMGBENCH_FORMATS_DIR", str(scratch))
        proc = run_pytest(
            [
                str(BENCH),
                f"--dataset={dataset}",
                f"--imgbench-results={out / 'results'}",
                "--imgbench-rounds=2",
                "--imgbench-process=in-process",  # correctness: the quick run covers the worker
                *args,
            ],
            cwd=out,
            timeout=600,
        )
    assert list(scratch.iterdir()) == []
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-3000:]
    (parquet,) = (out / "results").glob("*.parquet")
    frame = pd.read_parquet(parquet)
    frame["extra"] = frame["extra_json"].map(lambda s: json.loads(s) if isinstance(s, str) else {})
    frame["params"] = frame["params_json"].map(json.loads)
    return frame


@pytest.fixture(scope="module")
def quick_run(quick_session: SessionRun) -> pd.DataFrame:
    """The format rows of the test session's one quick run (every stage, tfrecord blocked;
    tests/shared_runs.py): its build folder is empty again after the session."""
    assert quick_session.scratch_left == []
    assert quick_session.returncode == 0, quick_session.output
    frame = quick_session.frame("format")
    frame["extra"] = frame["extra_json"].map(lambda s: json.loads(s) if isinstance(s, str) else {})
    frame["params"] = frame["params_json"].map(json.loads)
    return frame


def test_quick_profile_rows(quick_run: pd.DataFrame) -> None:
    ok = quick_run[quick_run.status == "ok"]
    assert set(ok["library"]) == {
        "image-folder",
        "lmdb",
        "webdataset",
        "parquet",
        "numpy",
        "raw-file",
    }
    assert set(quick_run["storage"]) == {"local"}  # quick runs no S3 cases
    assert quick_run["storage_endpoint"].isna().all()
    writes = ok[ok["mode"] == "write"]
    assert len(writes) == 5
    for extra in writes["extra"]:
        assert extra["bytes_on_disk"] > 0 and 0.9 < extra["size_ratio"] < 2
        assert extra["write_images_per_s"] > 0
        # the records' fsync, timed apart: part of the round, never all of it
        assert extra["sync_s_median"] > 0 and 0 < extra["sync_share"] < 1
        assert extra["verified_records"] == extra["records"]  # the last round's output, read back
    reads = ok[ok["mode"] == "read"]
    assert set(reads["cache_state"]) == {"warm"}
    assert (reads["images_per_s_median"] > 0).all()
    for extra in reads["extra"]:
        assert extra["order"] == "sequential" and "size_ratio" in extra
        if extra["format"] != "raw-file":  # every record of the store read back before timing
            assert extra["verified_records"] == extra["records"]
    assert (reads["cache_method"].str.startswith("warm")).all()


@pytest.fixture(scope="module")
def full_run(tmp_path_factory: pytest.TempPathFactory, photo_dir: Path) -> pd.DataFrame:
    """One `full` session of tfrecord (made unimportable), LMDB and the raw file: the missing
    library's rows and the cold reads, from one session instead of two."""
    return _run(
        tmp_path_factory.mktemp("formats-full"),
        photo_dir,
        "--imgbench-profile=full",
        "-p",
        "tests.formats.block_imports",
        "-k",
        "tfrecord or lmdb or raw-file",
    )


def test_missing_library_is_a_skipped_row_with_the_reason(full_run: pd.DataFrame) -> None:
    frame = full_run[full_run["test_id"].str.contains("tfrecord")]  # what `-k tfrecord` ran
    assert len(frame) > 0
    assert (frame["status"] == "skipped").all()
    assert frame["reason"].str.contains("cannot import tfrecord").all()


def test_cold_reads_evict_and_check(full_run: pd.DataFrame) -> None:
    frame = full_run[~full_run["test_id"].str.contains("tfrecord")]  # `-k "lmdb or raw-file"`
    cold = frame[(frame["cache_state"] == "cold")]
    assert len(cold) == 5  # full: lmdb 2 orders x 2 payloads; raw-file: 1
    if (cold["status"] == "skipped").all():  # a tmpfs temp folder: say so, no figure
        assert cold["reason"].str.contains("cold cache impossible").all()
        return
    assert (cold["status"] == "ok").all(), cold["reason"].tolist()
    assert cold["cache_method"].str.contains("mincore").all()
    for extra in cold["extra"]:
        assert extra["resident_after_evict_max"] <= 0.02
    raw = frame[(frame["library"] == "raw-file") & (frame["status"] == "ok")]
    assert set(raw["cache_state"]) == {"warm", "cold"}
    decode = frame[(frame["params"].map(lambda p: p["payload"]) == "decode")]
    assert (decode["megapixels_per_s_median"] > 0).all()
    for extra in decode[decode["status"] == "ok"]["extra"]:
        assert extra["verified_decodes"] == 4  # Pillow's decode of the stored bytes, checked
