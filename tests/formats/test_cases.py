"""The case matrix per profile, and where formats are built."""

from __future__ import annotations

from pathlib import Path

import pytest

from imgbench.formats.cases import format_cases
from imgbench.formats.registry import FORMATS, UNAVAILABLE
from imgbench.harness.scratch import choose_scratch_parent
from imgbench.harness.scratch import fs_type as _fs_type
from imgbench.profiles import get_profile

QUICK_FORMATS = ("folder", "lmdb", "tar", "parquet", "npy-packed")


def _params(cases):  # type: ignore[no-untyped-def]
    return [dict(c.params) for c in cases]


def test_quick_is_thin() -> None:
    cases = format_cases(get_profile("quick"))
    params = _params(cases)
    assert {p["format"] for p in params} == {*QUICK_FORMATS, "raw-file"}
    reads = [p for p in params if p["mode"] == "read"]
    assert {p["cache_state"] for p in reads} == {"warm"}
    assert {p["order"] for p in reads} == {"sequential"}
    assert {p["payload"] for p in reads} == {"bytes"}


@pytest.mark.parametrize("profile", ["default", "full"])
def test_every_format_of_the_profile_has_the_read_matrix(profile: str) -> None:
    """make bench reads stored bytes warm and cold, in order and shuffled; full also decodes."""
    cases = format_cases(get_profile(profile))
    assert len({c.case_id for c in cases}) == len(cases)
    params = _params(cases)
    chosen = [s for s in FORMATS if s.default or profile == "full"]
    assert {p["format"] for p in params} == {s.name for s in chosen} | {"raw-file"}
    if profile == "default":  # the two slowest to read, in full only
        assert {s.name for s in FORMATS} - {s.name for s in chosen} == {"zarr", "torch-save"}
    for spec in chosen:
        mine = [p for p in params if p["format"] == spec.name]
        writes = [p for p in mine if p["mode"] == "write"]
        reads = [p for p in mine if p["mode"] == "read"]
        assert len(writes) == 1
        both = {"bytes", "decode"} if profile == "full" else {"bytes"}
        payloads = {"array"} if spec.stores == "array" else both
        assert {(p["cache_state"], p["order"], p["payload"]) for p in reads} == {
            (c, o, p)
            for c in ("warm", "cold")
            for o in ("sequential", "shuffled")
            for p in payloads
        }
    raw = [p for p in params if p["format"] == "raw-file"]
    assert {p["cache_state"] for p in raw} == {"warm", "cold"}
    for case in cases:
        assert {"mode", "cache_state", "order", "payload"} <= set(case.params)
        assert case.stage == "format"


def test_every_library_is_listed_for_imgbench_env() -> None:
    for spec in FORMATS:
        assert spec.library and isinstance(spec.requires, tuple)
    assert any("mxnet" in name for name, _ in UNAVAILABLE)


def test_scratch_is_never_tmpfs(tmp_path: Path) -> None:
    parent = choose_scratch_parent(tmp_path)
    assert _fs_type(parent) not in ("tmpfs", "ramfs")
    if Path("/dev/shm").is_dir() and _fs_type(Path("/dev/shm")) == "tmpfs":
        assert _fs_type(choose_scratch_parent(Path("/dev/shm"))) != "tmpfs"
