"""The answer per disk, from rows built here: HDD/real per format, the pick, packing's verdict."""

from __future__ import annotations

import json
from typing import Any

import pandas as pd
import pytest

from imgbench.answer.disk_advice import disk_advice, hdd_over_real
from imgbench.report.disks import disk_answer_html, disk_answer_markdown


def _format_row(disk: str, fmt: str, ips: float, order: str = "shuffled") -> dict[str, Any]:
    params: dict[str, Any] = {"format": fmt, "mode": "read", "cache_state": "cold", "order": order}
    params |= {"payload": "bytes", "threads": 1}
    return {
        "status": "ok",
        "stage": "format",
        "storage": "local",
        "disk_profile": disk,
        "dataset_name": "photos",
        "sample_images": 32,
        "library": fmt,
        "variant": "v",
        "cache_state": "cold",
        "workers": None,
        "params_json": json.dumps(params),
        "images_per_s_median": ips,
    }


def _loader_row(disk: str, fmt: str, workers: int, ips: float, cache: str | None) -> dict[str, Any]:
    params = {"format": fmt, "workers": workers, "batch_size": 32}
    return {
        "status": "ok",
        "stage": "loader",
        "storage": "local",
        "disk_profile": disk,
        "dataset_name": "photos",
        "sample_images": 32,
        "library": "torch-dataloader",
        "variant": f"{fmt}-opencv-albumentations",
        "cache_state": cache,
        "workers": float(workers),
        "params_json": json.dumps(params),
        "images_per_s_median": ips,
    }


@pytest.fixture
def frame() -> pd.DataFrame:
    rows = [
        _format_row("none", "folder", 4000.0),
        _format_row("none", "lmdb", 7000.0),
        _format_row("none", "tar", 3900.0),
        _format_row("hdd", "folder", 150.0),
        _format_row("hdd", "lmdb", 600.0),
        _format_row("hdd", "tar", 1200.0),
        _format_row("hdd", "recordio", 900.0),  # not read on the real disk: no ratio
        _format_row("hdd", "folder", 170.0, order="sequential"),
        _loader_row("none", "files", 2, 900.0, None),
        _loader_row("none", "files", 0, 400.0, None),
        _loader_row("hdd", "files", 2, 140.0, "cold"),
        _loader_row("hdd", "files", 0, 9000.0, None),  # warm on the HDD: never the pick
    ]
    return pd.DataFrame.from_records(rows)


def test_hdd_over_real_per_format_where_both_exist(frame: pd.DataFrame) -> None:
    ratios = hdd_over_real(frame)
    assert list(ratios["format"]) == ["folder", "lmdb", "tar"]
    by_format = ratios.set_index("format")["hdd/real"]
    assert by_format["folder"] == pytest.approx(150 / 4000)
    assert by_format["tar"] == pytest.approx(1200 / 3900)
    assert set(ratios["order"]) == {"shuffled"}  # the sequential read is on the HDD only


def test_each_disk_gets_its_pick_and_packings_verdict(frame: pd.DataFrame) -> None:
    real, hdd = disk_advice(frame)
    assert (real.disk, hdd.disk) == ("none", "hdd")
    assert hdd.loader is not None and real.loader is not None
    assert (hdd.loader.workers, hdd.loader.cache, hdd.loader.images_per_s) == (2, "cold", 140.0)
    assert (real.loader.workers, real.loader.images_per_s) == (2, 900.0)
    assert hdd.best_format == "tar" and real.best_format == "lmdb"
    assert {p.format: p.pays_off for p in hdd.packing} == {
        "lmdb": True,
        "tar": True,
        "recordio": True,
    }
    assert {p.format: p.pays_off for p in real.packing} == {"lmdb": True, "tar": False}
    assert any("packing pays off (tar, lmdb, recordio)" in line for line in hdd.lines())


def test_one_disk_only_gives_no_per_disk_advice(frame: pd.DataFrame) -> None:
    assert disk_advice(frame[frame["disk_profile"] == "none"]) == []
    assert hdd_over_real(frame[frame["disk_profile"] == "hdd"]).empty


def test_the_report_shows_the_ratio_table_and_the_advice(frame: pd.DataFrame) -> None:
    ratios, advice = hdd_over_real(frame), disk_advice(frame)
    markdown = "\n".join(disk_answer_markdown(ratios, advice))
    assert "### Emulated HDD over the real disk, cold" in markdown
    assert "| photos | 32 | tar | shuffled | bytes | 3,900 | 1,200 | 0.31 |" in markdown
    assert "On the emulated hdd disk: pick torch-dataloader" in markdown
    html = disk_answer_html(ratios, advice)
    assert "<td>0.04</td>" in html and "Which format and workers on each disk" in html
    assert disk_answer_markdown(ratios.iloc[0:0], []) == []


def test_rows_of_different_samples_are_never_compared(frame: pd.DataFrame) -> None:
    hdd = frame["disk_profile"] == "hdd"
    assert hdd_over_real(frame.assign(sample_images=frame["sample_images"].where(hdd, 128))).empty
