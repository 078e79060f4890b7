"""Rows of real loader cases, as imgbench.loaders.cases writes their params_json, for the
export tests (no measurement: the export reads a row's identity, settings and figure)."""

from __future__ import annotations

from typing import Any

from imgbench.loaders.cases import loader_case
from imgbench.loaders.plan import LoaderPlan
from imgbench.loaders.registry import pipeline_config
from imgbench.measure.case import Case
from imgbench.measure.rows import case_listing

PLAN = LoaderPlan(batch_size=4)


def row_of(case: Case, ips: float = 100.0, **columns: Any) -> dict[str, Any]:
    """The row a measured ``case`` would leave, with the columns the export's header cites."""
    return {
        **case_listing(case.test_id, case),
        "run_id": "20261127T000000Z-test-000000",
        "created_utc": "2026-11-27T00:00:00Z",
        "status": "ok",
        "images_per_s_median": ips,
        "allocator": "glibc",
        "hostname": "host",
        "machine_id": "m0",
        "cpu_cores_logical": 2,
        "cpu_model": "test CPU",
        "dataset_name": "tiny",
        "dataset_fingerprint": "f0",
        "dataset_codec": "jpeg",
        "dataset_images": 10,
        **columns,
    }


def loader_row(
    library: str, workers: int, pipeline: str = "default", **knobs: Any
) -> dict[str, Any]:
    """A row of ``library`` at ``workers`` over the named pipeline (NAMED_PIPELINES)."""
    case = loader_case(library, workers, plan=PLAN, config=pipeline_config(pipeline), **knobs)
    return row_of(case)


def dali_row(threads: int, documented: bool = False) -> dict[str, Any]:
    from imgbench.loaders.libs.dali import DOCUMENTED, dali_case

    return row_of(dali_case(PLAN, threads, documented=DOCUMENTED if documented else None))


def documented_row(library: str, workers: int, **knobs: Any) -> dict[str, Any]:
    """An as-documented row (imgbench.loaders.documented) of ``library`` over the default
    pipeline: its adapter's own ``DOCUMENTED`` shape."""
    from imgbench.loaders.registry import get_loader

    module = get_loader(library).load()
    return row_of(loader_case(library, workers, plan=PLAN, documented=module.DOCUMENTED, **knobs))
