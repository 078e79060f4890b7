"""The posts' DataLoaderX (BackgroundGenerator over a DataLoader with workers) and the
DataLoader's in_order=False, on real photos: checked batches, recorded parameters, no worker
left."""

from __future__ import annotations

import threading

import psutil
import pytest

from imgbench.loaders import cases
from imgbench.loaders.plan import LoaderPlan
from imgbench.measure.context import CaseContext
from imgbench.profiles import get_profile

PLAN = get_profile("quick").plan(LoaderPlan)


def _measure(ctx: CaseContext, case):  # type: ignore[no-untyped-def]
    from prefetch_generator import BackgroundGenerator

    workload = case.prepare(ctx, case)
    assert workload.close is not None
    try:
        for _ in range(2):  # a warm-up round, then a measured one
            for item in workload.items:
                workload.fn(item)
    finally:
        workload.close()
    # the background thread is gone (torch's own queue feeders end on their own, a moment later)
    assert not [t for t in threading.enumerate() if isinstance(t, BackgroundGenerator)]
    return workload.extra


@pytest.mark.parametrize("workers", [0, 2])
def test_dataloaderx_runs_over_the_dataloaders_workers(
    photo_ctx: CaseContext, workers: int
) -> None:
    pytest.importorskip("prefetch_generator")
    case = cases.loader_case("prefetch-generator", workers, plan=PLAN, method="dataloaderx")
    assert case.variant.endswith("+dataloaderx")
    extra = _measure(photo_ctx, case)
    assert extra["first_batch_check"] == "pass"
    assert extra["background_max_prefetch"] == 1
    assert len(extra["worker_pids"]) == workers
    assert extra["workers_alive_after_close"] == [] and extra["workers_left_after_reap"] == []
    assert extra["epoch_start_s"] > 0  # a new epoch restarts the background thread too
    assert not [p for p in extra["worker_pids"] if psutil.pid_exists(p)]


def test_dataloaderx_records_au_with_a_step(photo_ctx: CaseContext) -> None:
    pytest.importorskip("prefetch_generator")
    case = cases.loader_case(
        "prefetch-generator", 2, plan=PLAN, method="dataloaderx", accelerator=400
    )
    extra = _measure(photo_ctx, case)
    assert 0 < extra["au"] <= 1 and extra["compute_s_per_batch"] == pytest.approx(8 / 400)


def test_in_order_false_is_a_recorded_dataloader_row(photo_ctx: CaseContext) -> None:
    default = cases.loader_cases(get_profile("default"))
    (row,) = [c for c in default if c.params.get("in_order") is False]
    assert row.library == "torch-dataloader" and row.params["workers"] == 2
    assert row.variant.endswith("+out-of-order") and "in_order=false" in row.case_id
    case = cases.loader_case("torch-dataloader", 2, plan=PLAN, in_order=False)
    workload = case.prepare(photo_ctx, case)
    assert workload.close is not None
    try:
        assert workload.fn.__self__.loader.loader.in_order is False  # type: ignore[attr-defined]
        for item in workload.items:
            workload.fn(item)
    finally:
        workload.close()
    assert workload.extra["first_batch_check"] == "pass"
    assert workload.extra["workers_alive_after_close"] == []
