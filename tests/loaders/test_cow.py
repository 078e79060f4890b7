"""The copy-on-access experiment (pytorch issue 13246): a list index is copied into forked workers
that read it; NumPy and pyarrow indexes are not."""

from __future__ import annotations

from pathlib import Path

from imgbench.loaders.cow import (
    build,
    cow_cases,
    index_bytes,
    make_index,
    make_paths,
    paths_file,
    shard_lines,
)
from imgbench.measure.context import CaseContext


def _worker_uss(ctx: CaseContext, kind: str) -> tuple[int, int]:
    (case,) = [c for c in cow_cases((2,), 300_000) if c.params["index_kind"] == kind]
    workload = case.prepare(ctx, case)
    try:
        for _ in range(12):
            for item in workload.items:
                workload.fn(item)
    finally:
        assert workload.close is not None
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


def _forked_paths(index: object, wanted: list[int]) -> list[str]:
    """Entries of ``index`` looked up in a forked worker (as a DataLoader's worker does)."""
    import multiprocessing

    from imgbench.loaders.cow import IndexDataset

    global _FORKED  # the child inherits it through fork, never pickled
    _FORKED = IndexDataset(index)
    with multiprocessing.get_context("fork").Pool(1) as pool:
        return pool.map(_look_up, wanted)


_FORKED: object = None


def _look_up(i: int) -> str:
    from imgbench.loaders.cow import IndexDataset

    assert isinstance(_FORKED, IndexDataset)
    return _FORKED.path(i)


def test_every_kept_kind_looks_up_the_right_entry_in_a_forked_worker() -> None:
    wanted = [0, 1, 999, 1234, 4999]
    expected = [make_paths(5000)[i] for i in wanted]
    for kind in ("list", "numpy", "pyarrow", "pandas"):
        index = make_index(kind, 5000)
        assert _forked_paths(index, wanted) == expected, kind
    pandas = make_index("pandas", 5000)
    assert str(pandas.dtype) == "object" and index_bytes(pandas) > index_bytes(
        make_index("numpy", 5000)
    )


def test_a_streamed_index_splits_the_file_among_workers(tmp_path: Path) -> None:
    path = make_index("streamed", 1001, tmp_path)
    assert path == paths_file(tmp_path, 1001) and index_bytes(path) == 0
    every = [line.decode() for line in shard_lines(path, 0, 1)]
    assert every == make_paths(1001)
    for shards in (2, 3, 7):  # every line in exactly one worker's shard, in order
        parts = [[line.decode() for line in shard_lines(path, k, shards)] for k in range(shards)]
        assert [p for part in parts for p in part] == every and all(parts)


def test_a_streamed_index_through_forked_dataloader_workers(tmp_path: Path) -> None:
    import torch

    path = make_index("streamed", 64, tmp_path)
    lengths = {len(p) for p in make_paths(64)}
    params = {"workers": 2, "batch_size": 8, "start_method": "fork", "persistent_workers": True}
    loader = build(path, params)
    try:
        batches = loader.batches()
        seen = [next(batches)[0] for _ in range(10)]  # more than one pass: endless, no epoch end
    finally:
        loader.close()
    assert all(isinstance(b, torch.Tensor) and b.shape == (8,) for b in seen)
    assert {int(v) for b in seen for v in b} <= lengths


def test_the_plan_carries_the_new_kinds_and_full_runs_ten_million() -> None:
    from imgbench.loaders.cow import plan_cases
    from imgbench.loaders.plan import LoaderPlan
    from imgbench.profiles import get_profile

    kinds = {c.params["index_kind"] for c in plan_cases(LoaderPlan(cow_workers=(2,)))}
    assert kinds == {"list", "numpy", "pyarrow", "pandas", "streamed"}
    full = get_profile("full").plan(LoaderPlan)
    assert full.cow_entries == 10_000_000
    default = get_profile("default").plan(LoaderPlan)
    assert default.cow_entries == 1_000_000


def test_pandas_is_copied_like_a_list_and_a_streamed_index_holds_nothing(
    photo_ctx: CaseContext,
) -> None:
    pandas_uss, pandas_bytes = _worker_uss(photo_ctx, "pandas")
    streamed_uss, streamed_bytes = _worker_uss(photo_ctx, "streamed")
    assert streamed_bytes == 0
    assert pandas_uss > 0.3 * pandas_bytes  # object dtype: every str's refcount is written
    assert pandas_uss > streamed_uss + 0.2 * pandas_bytes
