"""The in-RAM ceilings hold the same samples the pipeline would read, and R training ranks' loaders
draw disjoint shards, step together, and leave no process behind."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import psutil
import pytest

from imgbench.loaders import cases
from imgbench.loaders.base import LoaderError
from imgbench.loaders.in_ram import BytesInRam, DecodedInRam, preloaded
from imgbench.loaders.libs.torch_dataloader import EndlessShard
from imgbench.loaders.pipeline import FileSource, PipelineConfig
from imgbench.loaders.plan import LoaderPlan
from imgbench.loaders.ranks import RanksLoader
from imgbench.loaders.registry import pipeline_config
from imgbench.measure.context import CaseContext
from imgbench.profiles import get_profile
from imgbench.readers.registry import build_reader, find_spec
from tests.loaders.conftest import make_context

PLAN = get_profile("quick").plan(LoaderPlan)


def _files(root: Path) -> FileSource:
    paths = sorted(str(p) for p in root.rglob("*.jpg"))
    return FileSource(paths, [i % 2 for i in range(len(paths))])


def _descendants() -> set[int]:
    return {c.pid for c in psutil.Process().children(recursive=True)}


def test_bytes_in_ram_hand_over_the_files_bytes(photo_dir: Path) -> None:
    source = _files(photo_dir)
    pool = BytesInRam(source)
    assert len(pool) == len(source)
    assert pool.nbytes == sum(len(source[i][0]) for i in range(len(source)))
    for index in range(len(source)):
        assert pool[index] == source[index]
    assert not pool.buffer.flags.writeable


def test_decoded_in_ram_hold_the_decoders_pixels(photo_dir: Path) -> None:
    source = _files(photo_dir)
    decode = build_reader(find_spec("opencv", "imdecode-rgb")).decode
    pool = DecodedInRam(source, decode)
    for index in (0, len(source) - 1):
        image, label = pool[index]
        assert np.array_equal(image, decode(source[index][0]))
        assert label == source[index][1] and not image.flags.writeable


def test_a_broken_file_in_the_preload_is_named(tmp_path: Path, photo_dir: Path) -> None:
    bad = tmp_path / "a" / "truncated.jpg"
    bad.parent.mkdir()
    bad.write_bytes(next(photo_dir.rglob("*.jpg")).read_bytes()[:200])
    with pytest.raises(ValueError, match=r"truncated\.jpg"):
        preloaded(FileSource([str(bad)], [0]), "decoded", "opencv/imdecode-rgb")


def test_ceiling_configs_are_checked() -> None:
    assert pipeline_config("ram-bytes").label.startswith("bytes in RAM: files > ")
    with pytest.raises(ValueError, match="preload"):
        PipelineConfig(preload="decoded", storage="s3")
    with pytest.raises(ValueError, match="preload"):
        PipelineConfig(preload="everything")  # type: ignore[arg-type]


def test_shards_of_an_epoch_never_overlap_and_cover_the_pool() -> None:
    pool = list(range(103))
    firsts = []
    for rank in range(4):
        drawn = EndlessShard(pool, rank, 4)
        iterator = iter(drawn)
        firsts.append([next(iterator) for _ in range(25)])  # 103 // 4 per epoch
        second = [next(iterator) for _ in range(25)]
        assert second != firsts[-1]  # the next epoch reshuffles
    flat = [i for shard in firsts for i in shard]
    assert len(set(flat)) == len(flat) == 100


def _run(ctx: CaseContext, config: PipelineConfig, workers: int, ranks: int = 1) -> Any:
    case = cases.loader_case("torch-dataloader", workers, plan=PLAN, config=config, ranks=ranks)
    workload = case.prepare(ctx, case)
    try:
        # past the warm-up rounds: a step after them adds its stage times
        rounds = ctx.settings.warmup_rounds + 1
        counts = [workload.fn(item) for _ in range(rounds) for item in workload.items]
    finally:
        workload.close()
    return case, workload, counts


@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", ["ram-bytes", "ram-decoded"])
def test_a_ceiling_row_runs_and_says_what_it_held(photo_dir: Path, name: str) -> None:
    ctx = make_context(photo_dir)
    case, workload, counts = _run(ctx, pipeline_config(name), 2)
    kind = case.params["preload"]
    assert kind == name.removeprefix("ram-") and case.variant.endswith(f"+{kind}-in-ram")
    assert set(counts) == {PLAN.batch_size}
    assert workload.extra["first_batch_check"] == "pass"
    assert workload.extra["preload_bytes"] > 0 and "no read in the rounds" in workload.cache_method
    if kind == "decoded":  # the augmentation is all that is left: no decode time per sample
        assert workload.extra["stage_times_s"]["decode"] < 1e-4


@pytest.mark.timeout(300)
def test_two_ranks_step_together_and_stop(photo_dir_48: Path) -> None:
    ctx = make_context(photo_dir_48, max_images=48)
    before = _descendants()
    case, workload, counts = _run(ctx, cases.DEFAULT_PIPELINE, 1, ranks=2)
    assert case.params["ranks"] == 2 and case.variant.endswith("+2-ranks")
    assert workload.images_per_item == 2 * PLAN.batch_size
    assert set(counts) == {2 * PLAN.batch_size}  # every step holds one batch of each rank
    pids = workload.extra["worker_pids"]
    assert len(pids) == 4  # two ranks, one DataLoader worker each
    assert workload.extra["workers_alive_after_close"] == []
    assert _descendants() <= before


class _Unsharded:
    """A loader that ignores its rank: every rank would draw the same samples."""

    shard = None

    def __init__(self, params: Any) -> None:
        pass


def test_a_loader_that_does_not_shard_is_refused() -> None:
    before = _descendants()
    loader = RanksLoader(_Unsharded, {"workers": 0}, 2, timeout_s=30)
    try:
        with pytest.raises(LoaderError, match="does not shard its samples by rank"):
            next(loader.batches())
    finally:
        loader.close()
    assert _descendants() <= before


class _Dies:
    shard = (0, 0)

    def __init__(self, params: Any) -> None:
        self.shard = (params["rank"], params["ranks"])

    def batches(self) -> Any:
        os._exit(3)

    def worker_pids(self) -> list[int]:
        return []

    def close(self) -> None:
        pass


def test_a_rank_that_dies_is_a_loader_error() -> None:
    loader = RanksLoader(_Dies, {"workers": 0}, 2, timeout_s=30)
    try:
        with pytest.raises(LoaderError, match=r"rank 0 died"):
            next(loader.batches())
    finally:
        loader.close()
