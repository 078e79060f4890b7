"""The case matrix per profile, and where formats are built."""

from __future__ import annotations

from pathlib import Path

import pytest

from imgbench.formats.cases import format_cases
from imgbench.formats.registry import FORMATS, UNAVAILABLE
from imgbench.measure.scratch import choose_scratch_parent
from imgbench.measure.scratch import fs_type as _fs_type
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
    every = format_cases(get_profile(profile))
    assert len({c.case_id for c in every}) == len(every)
    cases = [c for c in every if c.columns.get("storage") == "local"]
    assert all("storage" not in c.params and not c.services for c in cases)  # ids as before
    params = _params(cases)
    chosen = [s for s in FORMATS if s.default or profile == "full"]
    assert {p["format"] for p in params} == {s.name for s in chosen} | {"raw-file"}
    if profile == "default":  # the two slowest to read, and the mosaic env's MDS: in full only
        assert {s.name for s in FORMATS} - {s.name for s in chosen} == {"zarr", "torch-save", "mds"}
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


def test_default_reads_the_s3_formats_from_a_bucket() -> None:
    from imgbench.formats.registry import S3_FORMATS

    cases = [c for c in format_cases(get_profile("default")) if c.columns.get("storage") == "s3"]
    # every S3 format but MDS (the mosaic env's, in full only)
    assert {c.params["format"] for c in cases} == {s.name for s in S3_FORMATS if s.default}
    assert {s.name for s in S3_FORMATS if not s.default} == {"mds"}
    assert {"folder", "tar", "litdata", "parquet"} <= {s.name for s in S3_FORMATS}
    for case in cases:
        assert case.services == ("s3",) and case.params["storage"] == "s3"
        assert case.params["payload"] == "bytes"
    assert {(c.params["format"], c.params["mode"], c.params["order"]) for c in cases} == {
        (s.name, mode, order)
        for s in S3_FORMATS
        if s.default
        for mode, order in (("upload", "sequential"), ("read", "sequential"), ("read", "shuffled"))
    }
    assert not [c for c in format_cases(get_profile("quick")) if c.columns["storage"] == "s3"]


def test_full_repeats_the_s3_cases_per_network_shape_and_keeps_unshaped_ids() -> None:
    full = [c for c in format_cases(get_profile("full")) if c.columns.get("storage") == "s3"]
    default = [c for c in format_cases(get_profile("default")) if c.columns["storage"] == "s3"]
    by_shape: dict[str, list] = {}  # type: ignore[type-arg]
    for case in full:
        by_shape.setdefault(case.columns["network_shaping"], []).append(case)
    shapes = ["rtt5ms-unlimited", "rtt50ms-unlimited", "rtt50ms-100mbit"]
    assert set(by_shape) == {"none", *shapes}
    unshaped = {c.case_id for c in by_shape["none"]}
    assert {c.case_id for c in default} <= unshaped  # the ids S3 cases always had
    assert all(c.services == ("s3",) and "network_shaping" not in c.params for c in default)
    for shape in shapes:
        cases = by_shape[shape]
        assert len(cases) == len(by_shape["none"])
        assert all(c.services == (f"s3@{shape}",) for c in cases)
        assert all(c.params["network_shaping"] == shape for c in cases)
    assert len({c.case_id for c in full}) == len(full)


def test_a_service_variant_shares_its_base_and_stops_first() -> None:
    from imgbench.measure.services import Services

    events: list[str] = []

    class Base:
        def acquire(self) -> str:
            events.append("base")
            return "server"

        def check(self) -> None: ...

        def stop(self) -> None:
            events.append("stop base")

        def variant(self, name: str) -> Variant:
            return Variant(self, name)

    class Variant:
        def __init__(self, base: Base, name: str) -> None:
            self.base, self.name = base, name

        def acquire(self) -> str:
            return f"{self.base.acquire()} via {self.name}"

        def check(self) -> None: ...

        def stop(self) -> None:
            events.append(f"stop {self.name}")

    services = Services()
    services._started["fake"] = Base()  # type: ignore[assignment]  # (SERVICES names real ones)
    assert services.handles(("fake@slow",)) == {"fake@slow": "server via slow"}
    assert services.get("fake@slow") is services.get("fake@slow")
    services.stop()
    assert events == ["base", "stop slow", "stop base"]
