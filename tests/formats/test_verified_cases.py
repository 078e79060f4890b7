"""Format cases read every built store back before timing: a store that returns one wrong byte or
one wrong label is a failed row naming the format, the record and what differs."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import imgbench.formats.registry as registry
import imgbench.formats.session as session
from imgbench.controls import case_context
from imgbench.datasets.manifest import Manifest
from imgbench.formats.base import MARKER, META_DIR, FormatSpec, build_format, fixed_array
from imgbench.formats.cases import _prepare_read, _prepare_write
from imgbench.formats.roundtrip import decode_check, difference, round_trip
from imgbench.measure.case import Case, Workload, spec_case
from imgbench.measure.context import CaseContext
from imgbench.measure.errors import CaseFailed
from imgbench.profiles import get_profile
from tests.conftest import run_pytest
from tests.formats.broken_format import SPEC as BROKEN
from tests.formats.wrong_labels_format import SPEC as WRONG_LABELS

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def ctx(photo_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[CaseContext]:
    from imgbench.datasets import load_dataset

    monkeypatch.setenv("IMGBENCH_FORMATS_DIR", str(tmp_path))
    monkeypatch.setattr(registry, "FORMATS", (*registry.FORMATS, BROKEN, WRONG_LABELS))
    context = case_context(load_dataset(str(photo_dir)), get_profile("quick"), max_images=64)
    yield context
    context.close()


def _read_case(spec: FormatSpec, order: str = "sequential", payload: str = "bytes") -> Case:
    params: dict[str, object] = {
        "format": spec.name,
        "mode": "read",
        "cache_state": "warm",
        "order": order,
    }
    params |= {"payload": payload, "threads": 1}
    return spec_case(spec, stage="format", prepare=_prepare_read, params=params)


def _failure(ctx: CaseContext, case: Case) -> str:
    with pytest.raises(CaseFailed) as failed:
        case.prepare(ctx, case)
    return str(failed.value)


def test_a_flipped_byte_fails_the_read_case_naming_the_record(
    ctx: CaseContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    second = ctx.entries()[1].path  # records are in manifest order
    calls: list[str] = []
    real = session.round_trip

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append("x")
        return real(*args, **kwargs)

    monkeypatch.setattr(session, "round_trip", counted)
    reason = _failure(ctx, _read_case(BROKEN))
    assert reason.startswith("broken-sqlite: round trip failed: record 1 (")
    assert f"record 1 ({second}), random access: byte " in reason
    assert "the source has 0x" in reason and "(1 byte differs)" in reason
    # the verdict is kept per built store: the next case fails the same way without a re-read
    assert _failure(ctx, _read_case(BROKEN, order="shuffled")) == reason
    assert calls == ["x"]


def test_a_wrong_label_fails_the_read_case(ctx: CaseContext) -> None:
    reason = _failure(ctx, _read_case(WRONG_LABELS))
    # the first record of class 0 or 1 (records follow the session's sample)
    assert re.match(r"wrong-labels-sqlite: round trip failed: record \d+ \(class_[01]/", reason)
    assert "random access: label 1, expected 0" in reason or "label 0, expected 1" in reason
    assert "more difference" in reason


def test_a_healthy_store_records_what_was_verified(ctx: CaseContext) -> None:
    spec = registry.get_format("sqlite")
    for payload in ("bytes", "decode"):
        case = _read_case(spec, payload=payload)
        workload: Workload = case.prepare(ctx, case)
        try:
            assert workload.extra["verified_records"] == len(ctx.entries())
            if payload == "decode":
                assert workload.extra["verified_decodes"] == 4
            else:
                assert "verified_decodes" not in workload.extra
        finally:
            assert workload.close is not None
            workload.close()


def test_the_write_case_reads_its_output_back_after_the_rounds(ctx: CaseContext) -> None:
    params = {"format": BROKEN.name, "mode": "write", "cache_state": "warm"}
    params |= {"order": "sequential", "payload": "bytes"}
    case = spec_case(BROKEN, stage="format", prepare=_prepare_write, params=params)
    workload = case.prepare(ctx, case)
    assert workload.before_round is not None and workload.close is not None
    workload.before_round()
    workload.fn(0)  # one round, as the harness would time it
    with pytest.raises(CaseFailed, match=r"broken-sqlite: .*record 1 \("):
        workload.close()
    assert workload.extra["verified_records"] == len(ctx.entries())
    # the write case's verdict came with the store it left: the read case fails on it
    assert "record 1 (" in _failure(ctx, _read_case(BROKEN))


def test_array_stores_are_compared_with_fixed_array(
    photo_manifest: Manifest, tmp_path: Path
) -> None:
    spec = registry.get_format("npy-decoded")
    entries = photo_manifest.entries[:3]
    report = build_format(spec, photo_manifest.root, entries, tmp_path / "npy")
    assert round_trip(spec, report.path, photo_manifest.root, entries).ok
    images = np.load(report.path / "images.npy", mmap_mode="r+")
    images[2, 10, 20, 1] ^= 0xFF  # one value of the third record
    images.flush()
    trip = round_trip(spec, report.path, photo_manifest.root, entries)
    assert not trip.ok and trip.records == 3
    assert trip.messages[0].startswith(f"record 2 ({entries[2].path}), random access: 1 of")
    assert "first at (10, 20, 1)" in trip.messages[0]


def test_difference_says_what_differs(photo_manifest: Manifest) -> None:
    data = (photo_manifest.root / photo_manifest.entries[0].path).read_bytes()
    assert difference(data, data) is None
    assert difference(data[:-1], data) == f"{len(data) - 1} bytes, the source has {len(data)}"
    assert difference(np.zeros(3), data) == "payload is ndarray, expected bytes"
    array = fixed_array(data, 32)
    assert difference(array.astype(np.int16), array) == (
        "array (32, 32, 3) int16, expected (32, 32, 3) uint8"
    )


def test_the_decode_check_compares_with_the_reference_decode(
    photo_manifest: Manifest, tmp_path: Path
) -> None:
    from imgbench.readers.libs.pillow import PillowReader

    spec = registry.get_format("sqlite")
    entries = photo_manifest.entries[:3]
    report = build_format(spec, photo_manifest.root, entries, tmp_path / "db")
    decode = PillowReader().decode
    good = decode_check(spec, report.path, photo_manifest.root, entries, [], decode)
    assert good.ok and good.records == 3
    bgr = decode_check(
        spec, report.path, photo_manifest.root, entries, [], lambda b: decode(b)[..., ::-1].copy()
    )
    assert not bgr.ok and bgr.records == 0
    assert bgr.problem is not None and bgr.problem.startswith(f"record 0 ({entries[0].path})")
    assert "BGR" in bgr.problem or "mean abs error" in bgr.problem


def test_a_bench_session_records_failed_rows_for_the_broken_format(
    photo_dir: Path, tmp_path: Path
) -> None:
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PYTHONPATH", os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
        patch.setenv("IMGBENCH_FORMATS_DIR", str(scratch))
        proc = run_pytest(
            [
                str(REPO / "benches" / "bench_formats.py"),
                "-p",
                "tests.formats.with_broken",
                f"--dataset={photo_dir}",
                f"--imgbench-results={tmp_path / 'results'}",
                "--imgbench-rounds=2",
                "--imgbench-profile=default",
                "--imgbench-process=in-process",  # worker processes would not load the plugin
                "-k",
                "broken or (image-folder and read and warm and sequential and bytes)",
            ],
            cwd=tmp_path,
            timeout=300,
        )
    (parquet,) = (tmp_path / "results").glob("*.parquet")
    frame = pd.read_parquet(parquet)
    broken = frame[frame.library == "broken"]
    assert len(broken) == 5, proc.stdout[-3000:]  # 1 write + 2 caches x 2 orders (bytes)
    assert (broken.status == "failed").all(), broken[["test_id", "status", "reason"]]
    assert broken.reason.str.contains(r"broken-sqlite: round trip failed: record 1 \(").all()
    healthy = frame[frame.library == "image-folder"]
    assert len(healthy) == 1 and (healthy.status == "ok").all(), healthy.reason.tolist()
    extra = json.loads(healthy.extra_json.iloc[0])
    assert extra["verified_records"] == extra["records"] > 0


def test_write_rounds_set_their_stores_aside_and_the_session_end_removes_them(
    ctx: CaseContext,
) -> None:
    """Nothing is deleted while a session measures: a deletion slows later file creations on ext4
    without a journal (CaseContext.discard). The stores go to the scratch's trash instead."""
    from imgbench.measure.context import DISCARDED

    spec = registry.get_format("folder")
    params = {"format": spec.name, "mode": "write", "cache_state": "warm"}
    params |= {"order": "sequential", "payload": "bytes"}
    case = spec_case(spec, stage="format", prepare=_prepare_write, params=params)
    workload = case.prepare(ctx, case)
    assert workload.before_round is not None and workload.close is not None
    for _ in range(3):
        workload.before_round()
        workload.fn(0)
    trash = ctx.scratch_dir() / DISCARDED
    set_aside = sorted(trash.iterdir())
    assert len(set_aside) == 2  # the first two rounds' stores, whole
    for store in set_aside:  # complete stores (their marker comes last), not half-deleted ones
        assert (store / "out" / META_DIR / MARKER).is_file()
        assert len([p for p in (store / "out").rglob("*") if p.is_file()]) > len(ctx.entries())
    workload.close()  # the last store is adopted by the read cases, the rest set aside
    assert len(list(trash.iterdir())) == 3
    scratch = ctx.scratch_dir()
    ctx.close()
    assert not scratch.exists()
