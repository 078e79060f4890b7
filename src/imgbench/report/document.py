"""What a report holds, whatever its format: the answers, the real problems, the sources.

Built once from loaded results, then written as HTML (``report.html``) or Markdown
(``report.markdown``), so both formats say the same thing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from imgbench.answer import Answer, TaskAnswer, answers, problems, task_answers
from imgbench.answer.decoders import DecoderRanking, decoder_rankings
from imgbench.answer.disk_advice import DiskAdvice, disk_advice, hdd_over_real
from imgbench.answer.disks import DiskTable, disk_tables
from imgbench.answer.gpu import GpuVerdict, gpu_verdict
from imgbench.answer.systems import SystemsTable, systems_tables
from imgbench.results.location import ObjectPath
from imgbench.results.store import LoadedResults

BENCH_HINT = "run `make bench`, or `imgbench run --profile quick`"
SHOWN_CANDIDATES = 8  # the best few, plus the tied set and the common default, keep it readable


@dataclass
class Report:
    answers: list[Answer]
    problems: pd.DataFrame  # status, stage, reason, cases
    legacy_skips: int  # older "runs in another environment" rows left out
    runs: list[str]  # run ids the report read
    unreadable: list[tuple[Path | ObjectPath, str]]  # result files that could not be read, and why
    notes: list[str] = field(default_factory=list)  # what is missing, in words
    # decoders on one thread vs inside the loader, per machine and dataset (the decoder supply)
    decoders: list[DecoderRanking] = field(default_factory=list)
    # "is the GPU waiting?", first, where the rows hold the gpu part (docs/gpu.md)
    gpu: GpuVerdict | None = None
    # per storage device: the read and format rows' images/s beside iostat's figures
    disks: list[DiskTable] = field(default_factory=list)
    # per format read cold on both: the emulated HDD's images/s over the real disk's
    hdd_ratios: pd.DataFrame = field(default_factory=pd.DataFrame)
    disk_advice: list[DiskAdvice] = field(default_factory=list)  # per measured disk
    # per task beyond classification (segmentation, crop-ocr): its own short answer
    tasks: list[TaskAnswer] = field(default_factory=list)
    # each system (DALI, tf.data, SPDL, ...) at its best against the pick, per task
    systems: list[SystemsTable] = field(default_factory=list)
    created_utc: datetime = field(default_factory=lambda: datetime.now(UTC))

    @property
    def title(self) -> str:
        return "imgbench report: what to change in your image pipeline"


def build_report(frame: pd.DataFrame, loaded: LoadedResults, source: str) -> Report:
    """``frame``: the rows chosen (a run, a group, everything); ``loaded`` names unreadable files."""
    table, legacy = problems(frame) if not frame.empty else (pd.DataFrame(), 0)
    found = answers(frame)
    tasks = task_answers(frame) if not frame.empty else []
    report = Report(
        answers=found,
        problems=table,
        legacy_skips=legacy,
        runs=sorted(frame["run_id"].dropna().astype(str).unique()) if not frame.empty else [],
        unreadable=list(loaded.skipped),
        decoders=decoder_rankings(frame) if not frame.empty else [],
        gpu=gpu_verdict(frame) if not frame.empty else None,
        disks=disk_tables(frame),
        hdd_ratios=hdd_over_real(frame),
        disk_advice=disk_advice(frame),
        tasks=tasks,
        systems=systems_tables(frame, found, tasks) if not frame.empty else [],
    )
    if not loaded.files and not loaded.skipped:
        report.notes.append(f"no result files in {source}: {BENCH_HINT}")
    elif frame.empty and loaded.skipped:
        report.notes.append(f"no readable result file in {source}; the unreadable ones are listed")
    elif not report.answers:
        report.notes.append(f"no measured (ok) rows in the chosen runs: {BENCH_HINT}")
    if len(report.answers) > 1:
        report.notes.append(
            f"{len(report.answers)} machine, dataset and output combinations: each has its own "
            "answer; they are never pooled"
        )
    return report
