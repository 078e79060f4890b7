"""`imgbench advise --target`: configurations that reach the target, fewest workers and least
memory first, with what limits them; and what to do when none does; the allocator that pays, only
where it beats glibc beyond noise."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from imgbench.answer.advise import spread
from imgbench.cli import app
from imgbench.machine import machine_info
from imgbench.measure.allocator import Allocator, AllocatorUnavailableError
from imgbench.results.schema import empty_row
from imgbench.results.store import write_rows


def _row(library: str, workers: int, ips: float, pss: int, stages: dict, **params: object) -> dict:
    row = empty_row()
    row.update(machine_info().as_row())
    extra = {
        "stage_times_s": stages,
        "peak_pss_bytes": pss,
        "pipeline": "files > opencv/imdecode-rgb > albumentations/numpy:train-classification",
        "pipeline_s_per_image": sum(stages.values()),
        "parallel_efficiency": params.pop("efficiency", 0.95),
    }
    all_params = {"workers": workers, "batch_size": 32, **params}
    row.update(
        run_id="r1",
        created_utc=datetime.now(UTC),
        stage="loader",
        case_id=f"loader/{library}/v[{json.dumps(all_params, sort_keys=True)}]",
        library=library,
        variant="files-opencv-albumentations",
        workers=workers,
        batch_size=32,
        params_json=json.dumps(all_params),
        extra_json=json.dumps(extra),
        status="ok",
        images_per_s_median=ips,
        peak_rss_bytes=pss,
    )
    return row


STAGES = {"read": 0.0001, "decode": 0.0015, "augment": 0.0016, "collate": 0.0002}


def _results(tmp_path: Path) -> Path:
    write_rows(_rows(), tmp_path / "r1.parquet")
    return tmp_path


def _rows() -> list[dict]:
    rows = [
        _row("torch-dataloader", 0, 300.0, 900_000_000, STAGES),
        _row("torch-dataloader", 2, 560.0, 1_500_000_000, STAGES),
        _row("torch-dataloader", 4, 580.0, 2_100_000_000, STAGES),
        _row("threadpool", 2, 560.0, 1_000_000_000, STAGES),
        _row("torch-dataloader", 2, 99.0, 1_500_000_000, STAGES, accelerator_images_per_s=100),
        _row(
            "torch-dataloader",
            2,
            290.0,
            1_500_000_000,
            {"read": 0.0001, "decode": 0.004, "augment": 0.001, "collate": 0.0},
            efficiency=0.4,
        ),
    ]
    rows[-1]["variant"] = "files-opencv-none"
    rows[-1]["case_id"] += "-none"
    return rows


def test_reaching_configurations_fewest_workers_and_least_memory_first(tmp_path: Path) -> None:
    result = CliRunner(env={"COLUMNS": "250"}).invoke(
        app, ["advise", "--target", "500", "--results", str(_results(tmp_path))]
    )
    assert result.exit_code == 0, result.output
    assert "3 configuration(s) reach it" in result.output
    assert (
        "threadpool" in result.output.split("Fewest workers and least memory:")[1].splitlines()[0]
    )
    table = result.output.split("Reaching the target")[1]
    assert table.index("threadpool") < table.index("torch-dataloader")  # 1.0 GB before 1.5 GB
    assert "augment 1.60 ms/img" in result.output
    assert "99" not in result.output.split("Reaching the target")[1]  # AU rows are not steady state


def test_no_configuration_reaches_the_target(tmp_path: Path) -> None:
    result = CliRunner(env={"COLUMNS": "250"}).invoke(
        app, ["advise", "--target", "5000", "--results", str(_results(tmp_path))]
    )
    assert result.exit_code == 0, result.output
    assert "No configuration reaches 5,000 images/s" in result.output
    assert "about 17 busy cores" in result.output  # 3.4 ms of work per image x 5000/s
    assert "hand-over between processes" in result.output  # the 0.4-efficiency row


def test_no_results(tmp_path: Path) -> None:
    result = CliRunner(env={"COLUMNS": "250"}).invoke(
        app, ["advise", "--target", "100", "--results", str(tmp_path)]
    )
    assert result.exit_code == 2
    assert "no loader rows" in result.output


def test_an_80_column_terminal_folds_instead_of_cutting(tmp_path: Path) -> None:
    result = CliRunner(env={"COLUMNS": "80"}).invoke(
        app, ["advise", "--target", "500", "--results", str(_results(tmp_path))]
    )
    assert result.exit_code == 0, result.output
    assert "…" not in result.output
    assert max(len(line) for line in result.output.splitlines()) <= 80


# -- the allocator dimension ------------------------------------------------------------------
JEMALLOC_PATH = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"
TUNED_VARIABLES = [
    "MALLOC_TRIM_THRESHOLD_=1000000000",
    "MALLOC_MMAP_THRESHOLD_=100000000",
    "MALLOC_TOP_PAD_=100000000",
]


def _under(row: dict, allocator: str, spread: float, session: bool = True) -> dict:
    """``row`` as the harness writes it under ``allocator``: an allocator session's case has
    ``"allocator": NAME`` among its params (so in its case_id); quartiles ``spread`` apart."""
    row = dict(row)
    params = json.loads(row["params_json"])
    if session:
        params["allocator"] = allocator
    text = ",".join(f"{k}={v}" for k, v in sorted(params.items()))
    ips = row["images_per_s_median"]
    row.update(
        case_id=f"{row['stage']}/{row['library']}/{row['variant']}[{text}]",
        params_json=json.dumps(params, sort_keys=True),
        allocator=allocator,
        allocator_env=json.dumps({"LD_PRELOAD": JEMALLOC_PATH} if "jemalloc" in allocator else {}),
        images_per_s_q1=ips * (1 - spread),
        images_per_s_q3=ips * (1 + spread),
    )
    return row


def _read(library: str, ips: float) -> dict:
    row = empty_row()
    row.update(machine_info().as_row())
    row.update(
        run_id="r1",
        created_utc=datetime.now(UTC),
        stage="read",
        library=library,
        variant="decode",
        codec="jpeg",
        mode="memory",
        threads=1,
        params_json=json.dumps({"codec": "jpeg", "mode": "memory", "threads": 1}),
        status="ok",
        images_per_s_median=ips,
    )
    return row


def _allocator_results(
    tmp_path: Path, tuned: float, tuned_spread: float, jemalloc: float = 1.0
) -> Path:
    """Pillow's decode under glibc (960 images/s) and glibc-tuned (``tuned`` x), OpenCV's within
    1%, and the 2-worker DataLoader under glibc and jemalloc (``jemalloc`` x)."""
    loader = _row("torch-dataloader", 2, 560.0, 1_500_000_000, STAGES)
    rows = [
        _under(_read("pillow", 960.0), "glibc", 0.02, session=False),
        _under(_read("pillow", 960.0 * tuned), "glibc-tuned", tuned_spread),
        _under(_read("opencv", 1170.0), "glibc", 0.02, session=False),
        _under(_read("opencv", 1180.0), "glibc-tuned", 0.02),
        _under(loader, "glibc", 0.02, session=False),
        _under({**loader, "images_per_s_median": 560.0 * jemalloc}, "jemalloc", 0.02),
    ]
    write_rows(rows, tmp_path / "r1.parquet")
    return tmp_path


def _advise(results: Path, columns: int = 250) -> str:
    result = CliRunner(env={"COLUMNS": str(columns)}).invoke(
        app, ["advise", "--target", "500", "--results", str(results)]
    )
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture
def jemalloc_here(monkeypatch: pytest.MonkeyPatch) -> None:
    def allocator(name: str) -> Allocator:
        assert name == "jemalloc"
        return Allocator(name, {"LD_PRELOAD": JEMALLOC_PATH})

    monkeypatch.setattr("imgbench.measure.allocator.allocator", allocator)


def test_allocator_that_pays_is_recommended_with_its_variables(
    tmp_path: Path, jemalloc_here: None
) -> None:
    output = _advise(_allocator_results(tmp_path, tuned=1.9, tuned_spread=0.02, jemalloc=1.2))
    section = output.split("Allocator: faster than glibc")[1]
    read = next(line for line in section.splitlines() if "│ read" in line)
    assert "glibc-tuned" in read and "1.90x" in read and "1,824 vs 960" in read
    assert "faster on 1 of 2" in section  # pillow gains, OpenCV's 1% is within its noise
    loader = next(line for line in section.splitlines() if "│ loader" in line)
    assert "jemalloc" in loader and "1.20x" in loader and "672 vs 560" in loader
    for variable in TUNED_VARIABLES:
        assert f"export {variable}" in section
    assert f"export LD_PRELOAD={JEMALLOC_PATH}" in section
    # the jemalloc loader row is a configuration of its own, named as one
    assert "files-opencv-albumentations · batch 32 · jemalloc" in output.split("Allocator:")[0]


def test_allocator_within_noise_or_too_small_is_not_recommended(
    tmp_path: Path, jemalloc_here: None
) -> None:
    # glibc-tuned 1.10x, but its rounds spread +-10%: its slow quartile is below glibc's fast one
    within_noise = _advise(_allocator_results(tmp_path, tuned=1.10, tuned_spread=0.10))
    # jemalloc 1.03x beyond noise, but under MIN_ALLOCATOR_GAIN; jemalloc slower: nothing either
    for folder, factor in ((tmp_path / "small", 1.03), (tmp_path / "slower", 0.8)):
        folder.mkdir()
        output = _advise(_allocator_results(folder, 1.0, 0.02, jemalloc=factor))
        assert "Allocator:" not in output and "LD_PRELOAD" not in output
    assert "Allocator:" not in within_noise and "MALLOC_" not in within_noise
    assert "glibc-tuned" not in within_noise


def test_noise_comes_from_the_samples_without_quartiles() -> None:
    row = pd.Series(
        {
            "images_per_s_q1": None,
            "images_per_s_q3": None,
            "images_per_round": 64,
            "samples_s": [0.1, 0.1, 0.2, 0.2],
        }
    )
    low, high = spread(row) or (0.0, 0.0)
    assert low == pytest.approx(64 / 0.2) and high == pytest.approx(64 / 0.1)
    assert spread(row.drop(["samples_s"])) is None


def test_missing_preload_library_names_the_debian_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def unavailable(name: str) -> Allocator:
        raise AllocatorUnavailableError(f"{name}: not found")

    monkeypatch.setattr("imgbench.measure.allocator.allocator", unavailable)
    output = _advise(_allocator_results(tmp_path, tuned=1.0, tuned_spread=0.02, jemalloc=1.3))
    assert "apt-get install libjemalloc2" in output
    assert "export LD_PRELOAD=libjemalloc.so.2" in output


def test_allocator_section_fits_80_columns(tmp_path: Path, jemalloc_here: None) -> None:
    output = _advise(_allocator_results(tmp_path, 1.9, 0.02, jemalloc=1.2), columns=80)
    assert "MALLOC_TOP_PAD_=100000000" in output and "…" not in output
    assert max(len(line) for line in output.splitlines()) <= 80


# -- memory: the workers' summed PSS against the machine's RAM --------------------------------
def _small_machine(tmp_path: Path, ram_bytes: int) -> Path:
    """The rows of ``_results`` measured on a machine with ``ram_bytes`` of RAM; the DataLoader
    rows record the main process's and each worker's PSS, as the memory sampler does."""
    rows = _rows()
    for row in rows:
        row["ram_bytes"] = ram_bytes
        extra = json.loads(row["extra_json"])
        workers = int(row["workers"] or 0)
        extra["final_pss_bytes"] = {"main": 600_000_000}
        extra["worker_pss_bytes_mean"] = 300_000_000 if workers else None
        row["extra_json"] = json.dumps(extra)
    accelerator = next(r for r in rows if "accelerator_images_per_s" in r["params_json"])
    extra = json.loads(accelerator["extra_json"])
    accelerator["extra_json"] = json.dumps({**extra, "au": 0.97})
    write_rows(rows, tmp_path / "r1.parquet")
    return tmp_path


def test_a_configuration_whose_pss_exceeds_ram_is_not_advised(tmp_path: Path) -> None:
    """2 GB of RAM: the 4-worker DataLoader (2.1 GB summed PSS) reaches 500 images/s but is
    named as not advised; each advised one states the RAM it leaves."""
    folder = _small_machine(tmp_path, ram_bytes=2_000_000_000)
    result = CliRunner(env={"COLUMNS": "250"}).invoke(
        app, ["advise", "--target", "500", "--results", str(folder)]
    )
    assert result.exit_code == 0, result.output
    table = result.output.split("Reaching the target")[1].split("Not advised")[0]
    assert "2 configuration(s) reach it" in result.output
    assert " 4 " not in table  # the 4-worker row is not among the advised
    assert "0.5 GB 25%" in table  # 2.0 GB RAM - 1.5 GB PSS (torch-dataloader, 2 workers)
    assert "1.0 GB 50%" in table  # threadpool, 1.0 GB PSS
    rule = result.output.split("Not advised:")[1]
    assert "1 configuration(s) reach the target but their processes' summed PSS" in rule
    assert "with 4 workers: 2.1 GB PSS, RAM 2.0 GB" in rule


def test_workers_needed_beyond_ram_are_said_to_be(tmp_path: Path) -> None:
    """No configuration reaches 5,000 images/s; 17 workers at 0.3 GB each plus the main
    process's 0.6 GB would need 5.7 GB: more than 4 GB of RAM."""
    folder = _small_machine(tmp_path, ram_bytes=4_000_000_000)
    result = CliRunner(env={"COLUMNS": "250"}).invoke(
        app, ["advise", "--target", "5000", "--results", str(folder)]
    )
    assert result.exit_code == 0, result.output
    assert "17 of its workers would hold about 5.7 GB PSS together" in result.output
    assert "more than this machine's RAM: not advised" in result.output


def test_au_rows_are_used_for_targets_they_cover(tmp_path: Path) -> None:
    folder = _small_machine(tmp_path, ram_bytes=24_000_000_000)
    runner = CliRunner(env={"COLUMNS": "250"})
    covered = runner.invoke(app, ["advise", "--target", "80", "--results", str(folder)])
    assert "kept an emulated 100 images/s accelerator 97% busy" in covered.output
    beyond = runner.invoke(app, ["advise", "--target", "500", "--results", str(folder)])
    assert "AU was measured for emulated accelerators up to 100 images/s" in beyond.output
    assert "The answer (" in beyond.output  # the shared answer (imgbench.answer)
    assert "95% interval" in beyond.output
