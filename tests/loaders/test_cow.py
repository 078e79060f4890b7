"""The copy-on-access experiment (pytorch issue 13246): a list index is copied into forked workers
that read it; NumPy and pyarrow indexes are not."""

from __future__ import annotations

from imgbench.loaders.cow import cow_cases, index_bytes, make_index
from imgbench.measure.context import CaseContext


def _worker_uss(ctx: CaseContext, kind: str) -> tuple[int, int]:
    (case,) = [c for c in cow_cases((2,), 300_000) if c.params["index_kind"] == kind]
    workload = case.prepare(ctx, case)
    try:
        for _ in range(12):
            for item in workload.items:
                workload.fn(item)
    finally:
        workload.close()
    extra = workload.extra
    assert extra["workers_alive_after_close"] == []
    workers = {k: v for k, v in extra["final_uss_bytes"].items() if k.startswith("worker")}
    assert len(workers) == 2
    return min(workers.values()), extra["index_bytes"]


def test_list_index_is_copied_into_workers_numpy_and_arrow_are_not(photo_ctx: CaseContext) -> None:
    list_uss, list_bytes = _worker_uss(photo_ctx, "list")
    numpy_uss, _ = _worker_uss(photo_ctx, "numpy")
    arrow_uss, _ = _worker_uss(photo_ctx, "pyarrow")
    assert list_uss > 0.3 * list_bytes  # most of the list's pages were touched and copied
    assert list_uss > numpy_uss + 0.2 * list_bytes
    assert list_uss > arrow_uss + 0.2 * list_bytes


def test_index_kinds_hold_the_same_paths() -> None:
    as_list, as_numpy, as_arrow = (make_index(k, 1000) for k in ("list", "numpy", "pyarrow"))
    assert as_numpy[7].decode() == as_list[7] == as_arrow[7].as_py()
    assert index_bytes(as_list) > index_bytes(as_numpy) > 0
