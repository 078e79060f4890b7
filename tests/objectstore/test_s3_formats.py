"""Every S3 format round-trips its records through a real server, and a damaged object is named."""

from __future__ import annotations

from pathlib import Path

import pytest

from imgbench.formats.base import FormatError, build_format
from imgbench.formats.registry import S3_FORMATS, get_format
from imgbench.formats.s3 import (
    delete_prefix,
    open_s3,
    put_store,
    s3_round_trip,
    stored_bytes,
    upload_store,
)
from imgbench.measure.errors import CaseFailed
from imgbench.objectstore.server import S3Endpoint, S3Server, free_ports
from tests.objectstore.conftest import needs_weed

pytestmark = needs_weed


@pytest.fixture(scope="module")
def manifest(tiny_dataset: Path):  # type: ignore[no-untyped-def]
    from imgbench.datasets.scan import scan

    return scan(tiny_dataset, use_cache=False)


@pytest.mark.parametrize("name", [spec.name for spec in S3_FORMATS])
def test_store_round_trips_through_s3(
    name: str, s3_server: S3Server, manifest, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    spec = next(s for s in S3_FORMATS if s.name == name)
    if reason := spec.unmet_requirement():
        pytest.skip(reason)
    endpoint = s3_server.endpoint
    local = build_format(get_format(name), manifest.root, manifest.entries, tmp_path / name)
    upload = upload_store(endpoint, local.path, f"test/{name}", local.meta)
    assert upload.seconds > 0 and upload.objects >= 1
    assert upload.stored_bytes >= local.meta.source_bytes * 0.9
    assert stored_bytes(endpoint, upload.prefix) == (upload.stored_bytes, upload.objects)
    cache = tmp_path / "cache"
    cache.mkdir()
    verdict = s3_round_trip(
        spec, endpoint, upload.prefix, manifest.root, manifest.entries, [], cache
    )
    assert verdict.ok, verdict.reason()
    assert verdict.records == len(manifest.entries) == 10
    with open_s3(spec, endpoint, upload.prefix, cache) as reader:  # a dropped cache still reads
        reader.drop_cache()
        assert reader[3][0] == (manifest.root / manifest.entries[3].path).read_bytes()
    assert list(cache.iterdir()) == []  # a reader removes its local cache when closed
    assert delete_prefix(endpoint, upload.prefix) == upload.objects + 2  # + key list and marker


def test_a_damaged_object_fails_the_round_trip_naming_the_record(
    s3_server: S3Server, manifest, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    spec = next(s for s in S3_FORMATS if s.name == "folder")
    endpoint = s3_server.endpoint
    local = build_format(get_format("folder"), manifest.root, manifest.entries, tmp_path / "f")
    put_store(endpoint, local.path, "test/damaged")
    client = endpoint.client()
    index = client.get_object(Bucket=endpoint.bucket, Key="test/damaged/index.tsv")["Body"].read()
    second = index.decode().split("\n")[1].split("\t")[0]
    original = (local.path / second).read_bytes()
    damaged = original[:100] + bytes([original[100] ^ 1]) + original[101:]
    client.put_object(Bucket=endpoint.bucket, Key=f"test/damaged/{second}", Body=damaged)
    verdict = s3_round_trip(spec, endpoint, "test/damaged", manifest.root, manifest.entries)
    assert not verdict.ok
    assert verdict.reason().startswith("folder: round trip failed: record 1 (")
    assert "byte 100 of" in verdict.reason()
    # a prefix without the completion marker is an incomplete upload
    client.delete_object(Bucket=endpoint.bucket, Key="test/damaged/_imgbench/complete.json")
    with pytest.raises(FormatError, match="not a complete imgbench store"):
        open_s3(spec, endpoint, "test/damaged")
    delete_prefix(endpoint, "test/damaged")


def test_a_case_fails_with_the_endpoint_fault_in_one_line(s3_server: S3Server) -> None:
    from types import SimpleNamespace

    from imgbench.formats.s3_cases import case_access
    from imgbench.objectstore.session import S3Access

    good = s3_server.endpoint
    (closed,) = free_ports(1)
    faults = {
        f"S3 endpoint http://127.0.0.1:{closed} unreachable": good.with_url(
            f"http://127.0.0.1:{closed}"
        ),
        f"S3 endpoint {good.url} rejected the credentials": S3Endpoint(
            good.url, good.access_key, "wrong-secret", good.bucket
        ),
        f"S3 endpoint {good.url}: bucket 'missing-bucket' does not exist": good.with_bucket(
            "missing-bucket"
        ),
    }
    case = SimpleNamespace(services=("s3",))
    for line, endpoint in faults.items():
        ctx = SimpleNamespace(service=lambda name, e=endpoint: S3Access(e, "a test server"))
        with pytest.raises(CaseFailed) as info:
            case_access(ctx, case)  # type: ignore[arg-type]
        assert str(info.value.reason).startswith(line)
        assert "\n" not in str(info.value.reason)
    ok = SimpleNamespace(service=lambda name: S3Access(good, "ok"))
    assert case_access(ok, case).endpoint == good  # type: ignore[arg-type]
