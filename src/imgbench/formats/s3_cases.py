"""Format cases on S3: upload a built store to the session's bucket, and read it back.

* ``upload``: one timed round uploads the local build of the format (its files warm in the page
  cache) to a fresh prefix (:func:`imgbench.formats.s3.put_store`); ``extra`` has ``upload_s``
  (median round), ``stored_bytes`` and ``stored_objects``. The last round's upload is read back
  through the S3 reader and compared with the source files before it is deleted.
* ``read``: order (sequential iteration / shuffled random access, fixed seed), bytes payload.
  The session's upload of the store (once per session, round-tripped before any timing) is read
  through the format's S3 reader. A round is one pass (never calibrated into several): before
  each round the reader drops its local cache (LitData's downloaded chunks), so every round
  reads from the server. ``time_to_first_sample_s``: from opening a fresh reader (index,
  footer, ...) to its first record, untimed by the rounds.

Every case first checks the endpoint (:func:`imgbench.objectstore.server.check_endpoint`): an
unreachable endpoint, rejected credentials or a missing bucket is a failed row naming which.
The endpoint comes from the session's ``s3`` service (``ctx.service("s3")``), never from here.

Network shape (``FormatPlan.network_shapes``): every case above once per shape. The unshaped
one (``rtt0ms-unlimited``) uses the ``s3`` service, with the parameters (and case ids) S3 cases
always had; a shaped one adds the shape's parameters (``network_shaping``,
``network_rtt_target_ms``, ``network_rate_mbit``) and uses the ``s3@<shape>`` service: the same
server through a shaped path the runner sets up once per session. Timed requests go through the
case's path; untimed set-up (the session's upload of a store, its round trip, deleting a round's
upload) goes to the server directly, so one upload serves every shape.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from imgbench.formats.base import FormatMeta, format_files
from imgbench.formats.plan import FormatPlan
from imgbench.formats.reads import StoreReads
from imgbench.formats.registry import get_format, get_s3_format, s3_formats
from imgbench.formats.s3 import (
    S3FormatSpec,
    S3Reader,
    Upload,
    delete_prefix,
    open_s3,
    put_store,
    s3_round_trip,
    stored_bytes,
    upload_store,
)
from imgbench.formats.session import built_format
from imgbench.measure.case import Case, Workload, spec_case
from imgbench.measure.context import CaseContext
from imgbench.measure.errors import CaseFailed

if TYPE_CHECKING:
    from imgbench.formats.roundtrip import RoundTrip
    from imgbench.objectstore.server import S3Endpoint
    from imgbench.objectstore.session import S3Access
    from imgbench.objectstore.shaping import NetworkShape

SEED = 0  # the same permutation as the local shuffled reads
SERVICE = "s3"  # the unshaped path; a shaped one is "s3@<shape>" (session.service_name)
CACHE_METHOD = (
    "n/a: S3 over the network path in storage_endpoint; the server's files as it keeps them "
    "(just written), the client's local cache emptied before every round"
)


def s3_cases(plan: FormatPlan, names: set[str]) -> list[Case]:
    """The S3 cases of the selected formats (``names``) that have an S3 reader, per shape."""
    from imgbench.objectstore.shaping import shape_named

    shapes = [shape_named(name) for name in dict.fromkeys(plan.network_shapes)]
    cases: list[Case] = []
    for spec in s3_formats():
        if spec.name not in names:
            continue
        for shape in shapes:
            base: dict[str, Any] = {"format": spec.name, "storage": "s3", "payload": "bytes"}
            if not shape.unshaped:  # unshaped cases keep the ids they always had
                base |= shape.params()
            upload = {**base, "mode": "upload", "order": "sequential", "cache_state": "warm"}
            cases.append(_case(spec, _prepare_upload, upload, shape))
            for order in plan.orders:
                read = {**base, "mode": "read", "order": order, "cache_state": "n/a", "threads": 1}
                cases.append(_case(spec, _prepare_read, read, shape))
    return cases


def _case(
    spec: S3FormatSpec,
    prepare: Callable[[CaseContext, Case], Workload],
    params: dict[str, Any],
    shape: NetworkShape,
) -> Case:
    from imgbench.objectstore.session import service_name

    return spec_case(
        spec,
        stage="format",
        prepare=prepare,
        params=params,
        services=(service_name(shape),),
        # the shape is in a skipped row too (no path was set up to fill the columns)
        columns={"storage": "s3", "network_shaping": "none" if shape.unshaped else shape.name},
    )


# -- shared --------------------------------------------------------------------------------------
def case_access(ctx: CaseContext, case: Case) -> S3Access:
    """The case's network path to the session's server, checked: a fault is a failed case
    naming it (one line)."""

    from imgbench.objectstore.server import EndpointError, check_endpoint

    (service,) = case.services
    access: S3Access = ctx.service(service)
    try:
        check_endpoint(access.endpoint)
    except EndpointError as exc:
        raise CaseFailed(str(exc)) from exc
    return access


def _store_name(ctx: CaseContext, name: str) -> str:
    return f"{ctx.dataset.fingerprint}-{ctx.sample().identity}/{name}"


def uploaded_store(ctx: CaseContext, spec: S3FormatSpec, endpoint: S3Endpoint) -> Upload:
    """The session's upload of ``spec``'s local build, made once (by the first case to need it)."""
    local = built_format(ctx, get_format(spec.name))
    name = _store_name(ctx, spec.name)
    return ctx.persisted(
        f"s3-upload-{name.replace('/', '-')}-{endpoint.port}",
        lambda: upload_store(endpoint, local.path, f"stores/{name}", local.meta),
    )


def _round_trip(
    ctx: CaseContext, spec: S3FormatSpec, endpoint: S3Endpoint, prefix: str, meta: FormatMeta
) -> RoundTrip:
    return s3_round_trip(
        spec,
        endpoint,
        prefix,
        Path(ctx.dataset.manifest.root),
        ctx.entries(),
        [path for path, _ in meta.skipped],
        scratch=_cache_dir(ctx),
    )


def verified_upload(
    ctx: CaseContext, spec: S3FormatSpec, endpoint: S3Endpoint, upload: Upload
) -> RoundTrip:
    """The round trip of the session's upload of ``spec``, run once per upload."""
    name = f"s3-round-trip-{upload.prefix.replace('/', '-')}-{endpoint.port}"
    return ctx.persisted(name, lambda: _round_trip(ctx, spec, endpoint, upload.prefix, upload.meta))


def _cache_dir(ctx: CaseContext) -> Path:
    folder = ctx.scratch_dir() / "s3-client-cache"
    folder.mkdir(exist_ok=True)
    return folder


def _size_extra(spec: S3FormatSpec, meta: FormatMeta, stored: int, objects: int) -> dict[str, Any]:
    return {
        "format": spec.name,
        "records": meta.count,
        "stored_bytes": stored,
        "stored_objects": objects,
        "source_bytes": meta.source_bytes,
        "size_ratio": round(stored / meta.source_bytes, 4) if meta.source_bytes else None,
        "skipped_files": len(meta.skipped),
        "s3_client": spec.client,
    }


# -- upload --------------------------------------------------------------------------------------
def _prepare_upload(ctx: CaseContext, case: Case) -> Workload:
    from imgbench.measure.cache import warm

    spec = get_s3_format(case.params["format"])
    access = case_access(ctx, case)
    endpoint = access.endpoint  # the case's path: the timed uploads
    server = access.server_endpoint  # the server itself: untimed set-up, checks, deletes
    local = built_format(ctx, get_format(spec.name))
    files = format_files(local.path)
    warm(files)  # the upload reads the local store from the page cache: it times the network
    base = f"uploads/{_store_name(ctx, spec.name)}"
    state: dict[str, Any] = {"round": 0, "prefix": None}
    durations: list[float] = []
    extra: dict[str, Any] = {"order": "sequential", "payload": "bytes", **access.extra()}

    def before_round() -> None:
        if state["prefix"] is not None:
            delete_prefix(server, state["prefix"])
        state["round"] += 1
        state["prefix"] = f"{base}/{state['round']}"

    def upload(_: object) -> None:
        durations.append(put_store(endpoint, local.path, state["prefix"]))

    def close() -> None:

        prefix = state["prefix"]
        if prefix is None or not durations:
            return
        stored, objects = stored_bytes(server, prefix)
        extra.update(_size_extra(spec, local.meta, stored, objects))
        extra["upload_s"] = round(statistics.median(durations), 6)
        extra["upload_images_per_s"] = round(local.meta.count / statistics.median(durations), 2)
        # the upload exists only after a timed round: the last one is read back here, untimed
        verdict = _round_trip(ctx, spec, server, prefix, local.meta)
        extra["verified_records"] = verdict.records
        delete_prefix(server, prefix)
        if not verdict.ok:
            raise CaseFailed(verdict.reason())

    return Workload(
        items=[0],
        fn=upload,
        images_per_item=local.meta.count,
        bytes_per_round=sum(f.stat().st_size for f in files),
        before_round=before_round,
        cache_method="the local store's files warm; a fresh prefix for every round",
        extra=extra,
        close=close,
        calibrate=False,
    )


# -- read ----------------------------------------------------------------------------------------
def _prepare_read(ctx: CaseContext, case: Case) -> Workload:

    spec = get_s3_format(case.params["format"])
    order = case.params["order"]
    access = case_access(ctx, case)
    endpoint = access.endpoint  # the case's path: every timed read, and the first sample
    upload = uploaded_store(ctx, spec, access.server_endpoint)  # once per session, any shape
    verdict = verified_upload(ctx, spec, access.server_endpoint, upload)  # before any timing
    if not verdict.ok:
        raise CaseFailed(verdict.reason())
    count = upload.meta.count
    items = list(range(count))
    if order == "shuffled":
        items = [int(i) for i in np.random.default_rng(SEED).permutation(count)]
    cache = _cache_dir(ctx)

    def fresh() -> S3Reader:
        return open_s3(spec, endpoint, upload.prefix, cache, meta=upload.meta)

    first_s = _time_to_first_sample(fresh, order, items[0])
    reads = StoreReads(order, fresh, lambda reader: reader.drop_cache())
    reads.reopen()
    extra: dict[str, Any] = {
        **_size_extra(spec, upload.meta, upload.stored_bytes, upload.objects),
        "order": order,
        "payload": "bytes",
        "upload_s": round(upload.seconds, 6),
        "time_to_first_sample_s": round(first_s, 6),
        "verified_records": verdict.records,
        "s3_prefix": upload.prefix,
        **access.extra(),
    }

    return Workload(
        items=items,
        fn=reads.fetch(),
        bytes_per_round=upload.meta.source_bytes,
        before_round=reads.before_round,
        cache_method=CACHE_METHOD,
        extra=extra,
        close=reads.close,
        library_version=spec.version(),
        calibrate=False,  # a second pass would read the client's cache, not the server
    )


def _time_to_first_sample(open_reader: Callable[[], S3Reader], order: str, first: int) -> float:
    """Seconds from opening a fresh reader to its first record (in the case's order)."""
    start = time.perf_counter()
    reader = open_reader()
    try:
        if order == "sequential":
            iterator = iter(reader)
            next(iterator)
            elapsed = time.perf_counter() - start
            if hasattr(iterator, "close"):
                iterator.close()
        else:
            reader[first]
            elapsed = time.perf_counter() - start
        return elapsed
    finally:
        reader.close()
