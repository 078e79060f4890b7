"""Is the GPU waiting? The verdict from gpu rows (made here as a run would write them)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from imgbench.answer.gpu import gpu_verdict


def _row(variant: str, rate: float, library: str = "gpu", **params: Any) -> dict[str, Any]:
    extra = params.pop("extra", {})
    return {
        "library": library,
        "variant": variant,
        "status": "ok",
        "workers": 16,
        "images_per_s_median": rate,
        "params_json": json.dumps(params),
        "extra_json": json.dumps({"device": "NVIDIA H100", **extra}),
    }


def _frame(*rows: dict[str, Any]) -> pd.DataFrame:
    return pd.DataFrame(list(rows))


STEP = _row("step-cached-resnet50", 3000.0)
CPU_UINT8 = _row("files-opencv-x-uint8", 2000.0, "torch-dataloader", pipeline="a:train-uint8")


def test_no_gpu_rows_no_verdict() -> None:
    assert gpu_verdict(_frame(CPU_UINT8)) is None


def test_a_loader_slower_than_the_step_leaves_the_gpu_waiting_on_the_cpu() -> None:
    verdict = gpu_verdict(
        _frame(
            STEP,
            CPU_UINT8,
            _row("feed-uint8-pinned+copy", 1900.0, feed="uint8-pinned"),
            _row("feed-uint8-pinned+resnet50", 1800.0, feed="uint8-pinned", extra={"au": 0.6}),
        )
    )
    assert verdict is not None and verdict.waiting
    assert verdict.au == 0.6 and verdict.stepped == "feed-uint8-pinned+resnet50"
    assert round(verdict.gpus_kept_at_90, 3) == round(1900 / 2700, 3)
    assert verdict.bound == "CPU decode/augment"
    assert verdict.lines()[0] == "Is the GPU waiting? yes (NVIDIA H100)"


def test_a_feed_slower_than_its_cpu_loader_is_bound_by_the_copy() -> None:
    verdict = gpu_verdict(
        _frame(STEP, CPU_UINT8, _row("feed-uint8-pageable+copy", 1000.0, feed="uint8-pageable"))
    )
    assert verdict is not None and verdict.bound == "the copy to the device"


def test_nvjpeg_feeds_are_bound_by_gpu_decode_or_by_reading() -> None:
    feed = _row("feed-nvjpeg-gpu-augment+copy", 2500.0, feed="nvjpeg-gpu-augment")
    fast = gpu_verdict(_frame(STEP, feed, _row("decode-nvjpeg-batched", 2600.0)))
    slow = gpu_verdict(_frame(STEP, feed, _row("decode-nvjpeg-batched", 9000.0)))
    assert fast is not None and fast.bound == "GPU decode (nvJPEG)"
    assert slow is not None and slow.bound.startswith("reading the files")


def test_a_feed_that_keeps_a_gpu_busy_is_not_waited_for() -> None:
    verdict = gpu_verdict(_frame(STEP, _row("feed-float32-pinned+copy", 2900.0, feed="x")))
    assert verdict is not None and not verdict.waiting and verdict.bound.startswith("the step")


def test_the_best_feed_is_the_one_that_fed_the_step_fastest() -> None:
    """As on the H100 (the results branch, lab/device/2026-11-27-h100; its rows in tests/answer/data/): a pageable uint8 feed copied fastest alone but
    fed the step less than the side-stream prefetcher; the step's own AU decides "waiting"."""
    verdict = gpu_verdict(
        _frame(
            STEP,
            _row("feed-uint8-pageable+copy", 8000.0, feed="uint8-pageable"),
            _row("feed-uint8-pageable+resnet50", 2600.0, feed="uint8-pageable", extra={"au": 0.87}),
            _row("feed-uint8-prefetcher+copy", 2700.0, feed="uint8-prefetcher"),
            _row(
                "feed-uint8-prefetcher+resnet50",
                2900.0,
                feed="uint8-prefetcher",
                extra={"au": 0.97},
            ),
        )
    )
    assert verdict is not None
    assert verdict.stepped == "feed-uint8-prefetcher+resnet50"
    assert not verdict.waiting and verdict.au == 0.97
    assert verdict.bound.startswith("the step")
    # the loader delivered at least what it fed the step
    assert round(verdict.gpus_kept_at_90, 3) == round(2900 / 2700, 3)


def test_the_report_asks_is_the_gpu_waiting_first() -> None:
    import pandas as pd

    from imgbench.report.document import Report
    from imgbench.report.markdown import render_markdown

    verdict = gpu_verdict(
        _frame(
            STEP,
            _row("feed-uint8-pinned+copy", 1900.0, feed="uint8-pinned"),
            _row("feed-uint8-pinned+resnet50", 1800.0, feed="uint8-pinned", extra={"au": 0.6}),
        )
    )
    report = Report(
        answers=[], problems=pd.DataFrame(), legacy_skips=0, runs=[], unreadable=[], gpu=verdict
    )
    text = render_markdown(report)
    assert "### Is the GPU waiting? yes (NVIDIA H100)" in text
    assert "- it keeps 0.70 such GPUs at 90% busy" in text


def test_the_summary_line_quotes_each_figure_beside_its_own_row() -> None:
    """The H100 run's recorded rows (tests/answer/data/h100-gpu-rows.csv, from the results branch's lab/device/2026-11-27-h100: its step row and its feeds'):
    the line named `feed-uint8-prefetcher+copy` with the stepped row's 3,860 images/s and AU 97%,
    where that copy row measured 2,752. Each figure is now beside the row that measured it."""
    import pandas as pd

    rows = pd.read_csv(Path(__file__).parent / "data" / "h100-gpu-rows.csv")
    verdict = gpu_verdict(rows)
    assert verdict is not None and not verdict.waiting
    assert verdict.stepped == "feed-uint8-prefetcher+resnet50"
    assert verdict.feed == "feed-uint8-prefetcher+copy"
    line = verdict.lines()[2]
    assert line == (
        "the best feed: feed-uint8-prefetcher+resnet50 at 3,860 images/s, AU 97%; "
        "copied alone: feed-uint8-prefetcher+copy at 2,752 images/s"
    )
    assert verdict.lines()[1] == "the step alone: 3,946 images/s"
    assert round(verdict.gpus_kept_at_90, 2) == 1.09


def test_a_feed_without_a_stepped_row_says_its_au_was_not_measured() -> None:
    verdict = gpu_verdict(_frame(STEP, _row("feed-float32-pinned+copy", 2900.0, feed="x")))
    assert verdict is not None
    assert verdict.lines()[2] == (
        "the best feed: feed-float32-pinned+copy at 2,900 images/s, AU not measured"
    )


def test_on_a_cuda_machine_the_answer_is_chosen_by_the_real_steps_au() -> None:
    """The H100 rows: three feeds keep ResNet-50 at least 90% busy, all with 16 workers; the
    answer is the fastest of them (the side-stream prefetcher, 97%), and the line says how it
    was chosen. Lower every AU under 90% and it names the closest instead."""
    import json

    import pandas as pd

    rows = pd.read_csv(Path(__file__).parent / "data" / "h100-gpu-rows.csv")
    verdict = gpu_verdict(rows)
    assert verdict is not None and verdict.chosen is not None and verdict.reaching == 3
    assert (verdict.chosen.feed, verdict.chosen.workers) == ("uint8-prefetcher", 16)
    assert verdict.lines()[-1] == (
        "the answer here, chosen by the real step's AU: uint8-prefetcher keeps the step 97% busy "
        "with 16 CPU workers (3,860 images/s; 3 feed(s) reach 90%, this one with the fewest workers)"
    )
    # fewer workers win over a faster feed: the pinned uint8 feed at 8 workers, still at 90%+
    fewer = rows.copy()
    pinned = fewer["variant"] == "feed-uint8-pinned+resnet50"
    fewer.loc[pinned, "workers"] = 8
    chosen = gpu_verdict(fewer).chosen  # type: ignore[union-attr]
    assert chosen is not None and (chosen.feed, chosen.workers) == ("uint8-pinned", 8)

    def halve_au(text: str) -> str:
        extra = json.loads(text) if isinstance(text, str) else {}
        if "au" in extra:
            extra["au"] = extra["au"] / 2
        return json.dumps(extra)

    starved = rows.copy()
    starved["extra_json"] = starved["extra_json"].map(halve_au)
    verdict = gpu_verdict(starved)
    assert verdict is not None and verdict.reaching == 0 and verdict.waiting
    assert verdict.lines()[-1] == (
        "the answer here, chosen by the real step's AU: no feed keeps the step 90% busy; the "
        "closest, uint8-pinned, 50% with 16 CPU workers"
    )
