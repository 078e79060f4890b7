"""The report as GitHub-flavoured Markdown, for a CI job summary (``$GITHUB_STEP_SUMMARY``)."""

from __future__ import annotations

from imgbench.answer import Answer
from imgbench.answer.decoders import DecoderRanking, workers_column
from imgbench.answer.rows import number
from imgbench.report.disks import disks_markdown
from imgbench.report.document import SHOWN_CANDIDATES, Report


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


def _number(value: object) -> str:
    figure = number(value)
    return "" if figure is None else f"{figure:,.0f}"


def decoder_tables(ranking: DecoderRanking) -> list[str]:
    """The two rankings (one thread, inside the loader) and where their order differs."""
    counts = [workers_column(c) for c in ranking.worker_counts]
    lines = [
        f"### Decoders: one thread vs inside the loader · {ranking.title}",
        "",
        f"**{ranking.summary()}**",
        "",
        "One thread (JPEG from memory, reader stage):",
        "",
        "| rank | decoder | images/s |",
        "|---:|---|---:|",
        *(
            f"| {r.rank} | {_cell(r.decoder)} | {_number(r.images_per_s)} |"
            for r in ranking.single.itertuples(index=False)
        ),
        "",
        f"Inside the loader ({ranking.loader}, {ranking.pipeline}, batch "
        f"{ranking.batch_size or '?'}), images/s:",
        "",
        "| rank | decoder | best | at workers | " + " | ".join(counts) + " |",
        "|---:|---|---:|---:|" + "---:|" * len(counts),
    ]
    for row in ranking.in_loader.to_dict("records"):
        cells = [_number(row[c]) for c in counts]
        lines.append(
            f"| {row['rank']} | {_cell(row['decoder'])} | {_number(row['best_images_per_s'])} | "
            f"{row['best_workers']} | " + " | ".join(cells) + " |"
        )
    lines.append("")
    for label, changes in ranking.differences.items():
        text = "; ".join(changes) if changes else "the same order as on one thread"
        lines.append(f"- Where the order differs, {label}: {_cell(text)}.")
    lines.append("")
    return lines


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
    for ranking in report.decoders:
        lines += decoder_tables(ranking)
    lines += disks_markdown(report.disks)
    if not report.problems.empty:
        lines += ["### Skipped and failed cases", "", "| status | stage | reason | cases |"]
        lines.append("|---|---|---|---:|")
        lines += [
            "| " + " | ".join(_cell(v) for v in row) + " |"
            for row in report.problems.itertuples(index=False)
        ]
        lines.append("")
    return "\n".join(lines) + "\n"
