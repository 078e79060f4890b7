"""The report as one self-contained HTML file: styles inline, charts as inline SVG, no script.

SVG is rendered from the same Altair charts the dashboard draws, by vl-convert (Altair's own
converter), so the file needs no JavaScript and no network: it opens offline, in a mail client's
preview, or as a pull request attachment.
"""

from __future__ import annotations

from html import escape

import altair as alt

from imgbench.answer import Answer
from imgbench.answer.decoders import DecoderRanking
from imgbench.report.charts import candidates_chart, stage_times_chart
from imgbench.report.disks import disk_answer_html, disks_html
from imgbench.report.document import SHOWN_CANDIDATES, Report
from imgbench.report.systems import of_answer, of_tasks, systems_html

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 70rem; color: #222; }
h1 { font-size: 1.6rem; } h2 { margin-top: 2.5rem; border-bottom: 1px solid #ddd; }
.headline { font-size: 1.15rem; font-weight: 600; }
.metrics { display: flex; gap: 2rem; flex-wrap: wrap; margin: 1rem 0; }
.metric .value { font-size: 1.6rem; font-weight: 600; } .metric .label { color: #666; }
table { border-collapse: collapse; margin: 0.5rem 0 1rem; font-size: 0.9rem; }
td, th { border: 1px solid #ddd; padding: 0.25rem 0.5rem; text-align: left; vertical-align: top; }
code { font-size: 0.85rem; background: #f4f4f4; padding: 0 0.2rem; }
.missing { color: #8a5a00; } figure { margin: 1rem 0; }
.side { display: flex; gap: 2rem; flex-wrap: wrap; align-items: flex-start; }
"""


def svg(chart: alt.Chart | alt.LayerChart) -> str:
    import vl_convert

    return str(vl_convert.vegalite_to_svg(chart.to_dict()))


def _table(header: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _answer(answer: Answer) -> str:
    parts = [f"<h2>{escape(answer.title)}</h2>"]
    parts.append(f'<p class="headline">{escape(answer.headline())}</p>')
    if answer.best is not None:
        metrics = [
            ("Recommended, images/s (95% interval)", answer.best_text()),
            ("× default, 0 workers", answer.speedup_text(answer.default_0, short=True)),
            (
                f"× default, {answer.cores or '?'} workers",
                answer.speedup_text(answer.default_cores, short=True),
            ),
            ("Bounded by", answer.bound.stage if answer.bound else "unknown"),
        ]
        parts.append(
            '<div class="metrics">'
            + "".join(
                f'<div class="metric"><div class="value">{escape(v)}</div>'
                f'<div class="label">{escape(k)}</div></div>'
                for k, v in metrics
            )
            + "</div>"
        )
        items = [
            (f"<b>{escape(e.label)}:</b> " if e.label else "")
            + escape(e.text)
            + (f" <code>{escape(e.row)}</code>" if e.row else "")
            for e in answer.evidence()
        ]
        parts.append("<ul>" + "".join(f"<li>{i}</li>" for i in items) + "</ul>")
        parts.append(f'<figure class="chart">{svg(candidates_chart(answer))}</figure>')
        parts.append(_candidates(answer))
        if answer.stage_times_ms:
            parts.append(f'<figure class="chart">{svg(stage_times_chart(answer))}</figure>')
    for note in answer.missing if answer.best is not None else []:
        parts.append(f'<p class="missing">Missing: {escape(note)}.</p>')
    if answer.references:
        parts.append(
            "<h3>References, never a choice</h3><p>Experiments measure something other than a "
            "training pipeline; ceilings are one step at the hardware's limit.</p>"
        )
        parts.append(
            _table(
                ["kind", "what", "images/s", "why not a choice", "row"],
                [
                    [
                        escape(r.kind),
                        escape(r.name),
                        f"{r.images_per_s:,.0f}",
                        escape(r.note),
                        f"<code>{escape(r.case_id)}</code>",
                    ]
                    for r in answer.references
                ],
            )
        )
    return "\n".join(parts)


def _candidates(answer: Answer) -> str:
    """The chart's configurations as a table: each figure with its 95% interval and role."""
    rows = []
    for shown in answer.shown(SHOWN_CANDIDATES):
        m = shown.measured
        interval = f"{m.interval.low:,.0f}-{m.interval.high:,.0f}" if m.interval else ""
        rows.append(
            [
                escape(shown.label),
                f"{m.images_per_s:,.0f}",
                interval,
                escape(shown.role),
                escape(m.source),
                f"<code>{escape(m.case_id)}</code>",
            ]
        )
    return _table(["configuration", "images/s", "95% interval", "role", "source", "row"], rows)


def _decoders(ranking: DecoderRanking) -> str:
    """The two rankings side by side, each figure with its 95% interval and its standing
    against the fastest, and where their order differs beyond the noise."""
    single, in_loader = (
        _table(
            [str(c) for c in table.columns],
            [[escape(str(v)) for v in row] for row in table.itertuples(index=False)],
        )
        for table in (ranking.single_text(), ranking.in_loader_text())
    )
    where = escape(f"{ranking.loader}, {ranking.pipeline}, batch {ranking.batch_size or '?'}")
    items = [
        f"<li><b>{escape(label)}:</b> {escape(ranking.difference_text(label))}</li>"
        for label in ranking.differences
    ]
    return (
        f"<h2>Decoders: one thread vs inside the loader · {escape(ranking.title)}</h2>"
        f'<p class="headline">{escape(ranking.summary())}</p>'
        '<div class="side">'
        f"<div><h3>One thread</h3><p>JPEG from memory (reader stage); images/s (95% interval)"
        f"</p>{single}</div>"
        f"<div><h3>Inside the loader</h3><p>{where}; images/s (95% interval)</p>{in_loader}</div>"
        "</div>" + (f"<p>Where the order differs:</p><ul>{''.join(items)}</ul>" if items else "")
    )


def render_html(report: Report) -> str:
    body = [f"<h1>{escape(report.title)}</h1>"]
    body.append(
        f"<p>Written {report.created_utc:%Y-%m-%d %H:%M} UTC from {len(report.runs)} run(s): "
        + ", ".join(f"<code>{escape(r)}</code>" for r in report.runs)
        + "</p>"
    )
    for note in report.notes:
        body.append(f'<p class="missing">{escape(note)}.</p>')
    if report.unreadable:
        body.append("<p>Unreadable result files (left out):</p>")
        body.append(
            "<ul>"
            + "".join(
                f"<li><code>{escape(str(p))}</code>: {escape(reason)}</li>"
                for p, reason in report.unreadable
            )
            + "</ul>"
        )
    if report.gpu is not None:
        title, *rest = report.gpu.lines()
        body.append(f"<h2>{escape(title)}</h2>")
        body.append("<ul>" + "".join(f"<li>{escape(line)}</li>" for line in rest) + "</ul>")
    for answer in report.answers:
        body.append(_answer(answer))
        body.extend(systems_html(table) for table in of_answer(report.systems, answer))
    if report.tasks:
        body.append("<h2>Other tasks: each its own answer, never compared with classification</h2>")
        body.append(
            "<ul>"
            + "".join(
                f"<li><b>{escape(title)}</b>: {escape(headline)} (<code>{escape(row)}</code>)"
                + "<ul>"
                + "".join(f"<li>{escape(line)}</li>" for line in task.loader_lines())
                + "</ul></li>"
                for task, (title, headline, row) in ((t, t.lines()) for t in report.tasks)
            )
            + "</ul>"
        )
    body.extend(systems_html(table) for table in of_tasks(report.systems))
    body.extend(_decoders(ranking) for ranking in report.decoders)
    body.append(disks_html(report.disks))
    body.append(disk_answer_html(report.hdd_ratios, report.disk_advice))
    if not report.problems.empty:
        body.append("<h2>Skipped and failed cases</h2>")
        body.append(
            _table(
                ["status", "stage", "reason", "cases"],
                [[escape(str(v)) for v in row] for row in report.problems.itertuples(index=False)],
            )
        )
    if report.legacy_skips:
        body.append(
            f"<p>{report.legacy_skips} older skipped rows only said that a case runs in another "
            "environment; they are left out.</p>"
        )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(report.title)}</title><style>{STYLE}</style></head>"
        f"<body>{''.join(body)}</body></html>\n"
    )
