"""The report as GitHub-flavoured Markdown, for a CI job summary (``$GITHUB_STEP_SUMMARY``)."""

from __future__ import annotations

import pandas as pd

from imgbench.answer import Answer
from imgbench.answer.decoders import VERSUS, DecoderRanking
from imgbench.report.disks import disk_answer_markdown, disks_markdown
from imgbench.report.document import SHOWN_CANDIDATES, Report
from imgbench.report.systems import of_answer, of_tasks, systems_markdown


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _answer(answer: Answer) -> list[str]:
    lines = [f"### {answer.title}", "", f"**{answer.headline()}**", ""]
    if answer.best is not None:
        lines += [
            "| recommended images/s (95% interval) | × default, 0 workers | "
            f"× default, {answer.cores or '?'} workers | bounded by |",
            "|---:|---:|---:|---|",
            f"| {answer.best_text()} | {answer.speedup_text(answer.default_0, short=True)} | "
            f"{answer.speedup_text(answer.default_cores, short=True)} | "
            f"{answer.bound.stage if answer.bound else 'unknown'} |",
            "",
        ]
        lines += [
            "- " + (f"{e.label}: " if e.label else "") + e.text + (f" `{e.row}`" if e.row else "")
            for e in answer.evidence()
        ]
        lines += [f"- Missing: {note}." for note in answer.missing]
        lines += ["", *candidates_table(answer), ""]
    if answer.references:
        lines += [
            "References, never a choice:",
            "",
            "| kind | what | images/s | why not a choice |",
            "|---|---|---:|---|",
            *(
                f"| {r.kind} | {_cell(r.name)} | {r.images_per_s:,.0f} | {_cell(r.note)} |"
                for r in answer.references
            ),
            "",
        ]
    return lines


def candidates_table(answer: Answer) -> list[str]:
    """The chart's configurations as a table: each figure with its 95% interval and role."""
    lines = [
        "| configuration | images/s | 95% interval | role | source | row |",
        "|---|---:|---|---|---|---|",
    ]
    for shown in answer.shown(SHOWN_CANDIDATES):
        m = shown.measured
        low, high = (m.interval.low, m.interval.high) if m.interval else (None, None)
        interval = f"{low:,.0f}-{high:,.0f}" if low is not None and high is not None else ""
        lines.append(
            f"| {_cell(shown.label)} | {m.images_per_s:,.0f} | {interval} | {shown.role} | "
            f"{m.source} | `{_cell(m.case_id)}` |"
        )
    return lines


def decoder_tables(ranking: DecoderRanking) -> list[str]:
    """The two rankings (one thread, inside the loader), each figure with its 95% interval and
    its standing against the fastest, and where their order differs beyond the noise."""
    single, in_loader = ranking.single_text(), ranking.in_loader_text()
    lines = [
        f"### Decoders: one thread vs inside the loader · {ranking.title}",
        "",
        f"**{ranking.summary()}**",
        "",
        "One thread (JPEG from memory, reader stage):",
        "",
        *_text_table(single),
        "",
        f"Inside the loader ({ranking.loader}, {ranking.pipeline}, batch "
        f"{ranking.batch_size or '?'}), images/s (95% interval):",
        "",
        *_text_table(in_loader),
        "",
    ]
    for label in ranking.differences:
        lines.append(
            f"- Where the order differs, {label}: {_cell(ranking.difference_text(label))}."
        )
    lines.append("")
    return lines


def _text_table(table: pd.DataFrame) -> list[str]:
    """A table of text cells: the figures align right, the decoder and its standing left."""
    columns = [str(c) for c in table.columns]
    aligned = ["---" if c in ("decoder", VERSUS) else "---:" for c in columns]
    return [
        "| " + " | ".join(columns) + " |",
        "|" + "|".join(aligned) + "|",
        *("| " + " | ".join(_cell(v) for v in row) + " |" for row in table.itertuples(index=False)),
    ]


def render_markdown(report: Report) -> str:
    lines = [f"## {report.title}", ""]
    lines.append(f"From {len(report.runs)} run(s): " + ", ".join(f"`{r}`" for r in report.runs))
    lines.append("")
    lines += [f"> {note}." for note in report.notes]
    lines += [f"- unreadable, left out: `{p}`: {reason}" for p, reason in report.unreadable]
    if report.notes or report.unreadable:
        lines.append("")
    if report.gpu is not None:
        title, *rest = report.gpu.lines()
        lines += [f"### {title}", "", *(f"- {line}" for line in rest), ""]
    for answer in report.answers:
        lines += _answer(answer)
        for table in of_answer(report.systems, answer):
            lines += systems_markdown(table)
    if report.tasks:
        lines += ["### Other tasks: each its own answer, never compared with classification", ""]
        for task in report.tasks:
            title, headline, row = task.lines()
            lines += [f"- **{_cell(title)}**: {_cell(headline)} ({_cell(row)})"]
            lines += [f"  - {_cell(line)}" for line in task.loader_lines()]
        lines.append("")
    for table in of_tasks(report.systems):
        lines += systems_markdown(table)
    for ranking in report.decoders:
        lines += decoder_tables(ranking)
    lines += disks_markdown(report.disks)
    lines += disk_answer_markdown(report.hdd_ratios, report.disk_advice)
    if not report.problems.empty:
        lines += ["### Skipped and failed cases", "", "| status | stage | reason | cases |"]
        lines.append("|---|---|---|---:|")
        lines += [
            "| " + " | ".join(_cell(v) for v in row) + " |"
            for row in report.problems.itertuples(index=False)
        ]
        lines.append("")
    return "\n".join(lines) + "\n"
