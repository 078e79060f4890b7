"""The report as GitHub-flavoured Markdown, for a CI job summary (``$GITHUB_STEP_SUMMARY``)."""

from __future__ import annotations

from imgbench.answer import Answer
from imgbench.report.document import Report


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _times(value: float | None) -> str:
    return f"{value:.1f}x" if value is not None else "not measured"


def _answer(answer: Answer) -> list[str]:
    lines = [f"### {answer.title}", "", f"**{answer.headline()}**", ""]
    if answer.best is not None:
        lines += [
            "| recommended images/s | × default, 0 workers | "
            f"× default, {answer.cores or '?'} workers | bounded by |",
            "|---:|---:|---:|---|",
            f"| {answer.best.images_per_s:,.0f} | {_times(answer.speedup(answer.default_0))} | "
            f"{_times(answer.speedup(answer.default_cores))} | "
            f"{answer.bound.stage if answer.bound else 'unknown'} |",
            "",
        ]
        lines += [
            "- " + (f"{e.label}: " if e.label else "") + e.text + (f" `{e.row}`" if e.row else "")
            for e in answer.evidence()
        ]
        lines += [f"- Missing: {note}." for note in answer.missing]
        lines.append("")
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


def render_markdown(report: Report) -> str:
    lines = [f"## {report.title}", ""]
    lines.append(f"From {len(report.runs)} run(s): " + ", ".join(f"`{r}`" for r in report.runs))
    lines.append("")
    lines += [f"> {note}." for note in report.notes]
    lines += [f"- unreadable, left out: `{p}`: {reason}" for p, reason in report.unreadable]
    if report.notes or report.unreadable:
        lines.append("")
    for answer in report.answers:
        lines += _answer(answer)
    if not report.problems.empty:
        lines += ["### Skipped and failed cases", "", "| status | stage | reason | cases |"]
        lines.append("|---|---|---|---:|")
        lines += [
            "| " + " | ".join(_cell(v) for v in row) + " |"
            for row in report.problems.itertuples(index=False)
        ]
        lines.append("")
    return "\n".join(lines) + "\n"
