"""The report's "Each system at its best" tables (``imgbench.answer.systems``), in Markdown and
in HTML: one per machine, dataset, task and output, each system's best row against the pick."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from imgbench.answer import Answer
from imgbench.answer.rows import CLASSIFICATION
from imgbench.answer.systems import COLUMNS, TITLE, SystemsTable, tables_for

# the figures align right, the words left
_FIGURES = {"images/s (95% interval)", "× the pick (95% interval)"}


def of_answer(tables: Sequence[SystemsTable], answer: Answer) -> list[SystemsTable]:
    """The classification tables of ``answer``'s machine, dataset and output."""
    return tables_for(
        tables, CLASSIFICATION, answer.machine_id, answer.dataset_fingerprint, answer.output
    )


def of_tasks(tables: Sequence[SystemsTable]) -> list[SystemsTable]:
    """The tables of the tasks beyond classification."""
    return [t for t in tables if t.task != CLASSIFICATION]


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def systems_markdown(table: SystemsTable, heading: str = "####", rows: bool = True) -> list[str]:
    """The table under a ``heading`` (``####``: a part of the answer's ``###`` section);
    ``rows``: with the column that cites each line's row."""
    columns = [c for c in COLUMNS if rows or c != "row"]
    lines = [f"{heading} {TITLE} · {table.title}", "", f"_{table.caption()}._", ""]
    lines.append("| " + " | ".join(columns) + " |")
    lines.append("|" + "|".join("---:" if c in _FIGURES else "---" for c in columns) + "|")
    for record in table.records():
        cells = [f"`{_cell(record[c])}`" if c == "row" else _cell(record[c]) for c in columns]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    return lines


def cited_rows(table: SystemsTable) -> list[str]:
    """``- DALI: `CASE in run RUN` ``: the row behind each line, as a Markdown list."""
    return [f"- {_cell(s.system)}: `{_cell(s.measured.cite())}`" for s in table.systems]


def systems_html(table: SystemsTable) -> str:
    head = "".join(f"<th>{escape(c)}</th>" for c in COLUMNS)
    body = "".join(
        "<tr>"
        + "".join(
            f"<td><code>{escape(record[c])}</code></td>"
            if c == "row"
            else f"<td>{escape(record[c])}</td>"
            for c in COLUMNS
        )
        + "</tr>"
        for record in table.records()
    )
    return (
        f"<h3>{escape(TITLE)} · {escape(table.title)}</h3><p>{escape(table.caption())}.</p>"
        f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    )
