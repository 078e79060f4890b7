"""torchdata.nodes on real photos: both ParallelMapper methods give checked batches, a broken
sample fails with its cause, and close leaves no thread and no process behind."""

from __future__ import annotations

import functools
import threading
from typing import Any

import psutil
import pytest

from imgbench.loaders import cases
from imgbench.loaders.base import LoaderError
from imgbench.loaders.plan import LoaderPlan
from imgbench.measure.context import CaseContext
from imgbench.profiles import get_profile
from tests.loaders.faults import RaisesOnIndex

pytest.importorskip("torchdata.nodes")

PLAN = get_profile("quick").plan(LoaderPlan)


def _children() -> set[int]:
    return {p.pid for p in psutil.Process().children(recursive=True) if p.status() != "zombie"}


def _threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.is_alive()}


@pytest.mark.parametrize("method", ["thread", "process"])
def test_both_methods_give_checked_batches_and_close_everything(
    photo_ctx: CaseContext, method: str
) -> None:
    threads, children = _threads(), _children()
    case = cases.loader_case("torchdata-nodes", 2, plan=PLAN, method=method)
    assert case.params["method"] == method and case.variant.endswith("+" + method)
    workload = case.prepare(photo_ctx, case)
    assert workload.close is not None
    try:
        for item in workload.items:
            assert workload.fn(item) == 8
        loader = workload.fn.__self__.loader  # type: ignore[attr-defined]
        pids = loader.worker_pids()
        assert len(pids) == (2 if method == "process" else 0)
        if method == "thread":
            assert len(_threads() - threads) >= 4  # reader, 2 workers, sort, prefetcher
    finally:
        workload.close()
    extra = workload.extra
    assert extra["first_batch_check"] == "pass"
    assert extra["torchdata_method"] == method
    assert extra["pipeline_versions"]["torchdata"].startswith("0.11")
    assert extra["workers_alive_after_close"] == [] and extra["workers_left_after_reap"] == []
    assert _threads() - threads == set()
    assert _children() - children == set()
    if method == "process":
        assert set(extra["worker_pids"]) == set(pids)
        assert not any(
            psutil.pid_exists(p) and psutil.Process(p).status() != "zombie" for p in pids
        )


@pytest.mark.parametrize("method", ["thread", "process"])
def test_a_broken_sample_fails_with_its_cause(photo_ctx: CaseContext, method: str) -> None:
    threads, children = _threads(), _children()
    prepare = functools.partial(cases.prepare_loader, wrap=RaisesOnIndex)
    case = cases.loader_case(
        "torchdata-nodes", 2, plan=PLAN, method=method, prepare=prepare, batch_timeout_s=5.0
    )
    workload: Any = None
    with pytest.raises(LoaderError, match="broken sample 3"):
        workload = case.prepare(photo_ctx, case)
        for _ in range(4):  # the bad index is in the first epoch: within two batches of eight
            for item in workload.items:
                workload.fn(item)
    if workload is not None:
        workload.close()
    assert _threads() - threads == set()
    assert _children() - children == set()
