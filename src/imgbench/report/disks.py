"""The report's "Disks" section: per device the read and format rows' images/s beside iostat's
figures over their timed rounds (``imgbench.answer.disks``), in Markdown and in HTML; and the
emulated HDD's cold images/s over the real disk's per format, with each disk's advice
(``imgbench.answer.disk_advice``)."""

from __future__ import annotations

from html import escape

import pandas as pd

from imgbench.answer.disk_advice import DiskAdvice
from imgbench.answer.disks import DiskTable, text_table

TITLE = "Disks: images/s beside what iostat showed"
NOTE = (
    "median of the rows per case; r/s, rkB/s, r_await and %util are the device's /proc/diskstats "
    "deltas over the timed rounds, device-wide (other readers of the disk count too); a warm "
    "page cache reads little from the disk"
)


def disks_markdown(tables: list[DiskTable]) -> list[str]:
    if not tables:
        return []
    lines = [f"### {TITLE}", "", f"_{NOTE}._", ""]
    for disk in tables:
        shown = text_table(disk.table)
        lines += [f"**{disk.device}**", ""]
        lines.append("| " + " | ".join(shown.columns) + " |")
        lines.append(
            "|" + "|".join("---" if i < 3 else "---:" for i in range(shown.shape[1])) + "|"
        )
        lines += [
            "| " + " | ".join(str(v).replace("|", "\\|") for v in row) + " |"
            for row in shown.itertuples(index=False)
        ]
        lines.append("")
    return lines


def disks_html(tables: list[DiskTable]) -> str:
    if not tables:
        return ""
    parts = [f"<h2>{escape(TITLE)}</h2>", f"<p>{escape(NOTE)}.</p>"]
    for disk in tables:
        shown = text_table(disk.table)
        head = "".join(f"<th>{escape(str(c))}</th>" for c in shown.columns)
        body = "".join(
            "<tr>" + "".join(f"<td>{escape(str(v))}</td>" for v in row) + "</tr>"
            for row in shown.itertuples(index=False)
        )
        parts.append(f"<h3>{escape(disk.device)}</h3>")
        parts.append(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
    return "".join(parts)


RATIO_TITLE = "Emulated HDD over the real disk, cold"
RATIO_NOTE = (
    "per format read cold on both (format stage, median of the rows): the emulated HDD's "
    "images/s over the real disk's; below 1 the HDD is slower"
)
ADVICE_TITLE = "Which format and workers on each disk"


def ratio_text(ratios: pd.DataFrame) -> pd.DataFrame:
    """The HDD/real table with its figures as text (images/s whole, the ratio to 0.01)."""
    shown = ratios.copy()
    for column in ("real images/s", "hdd images/s"):
        shown[column] = [f"{float(v):,.0f}" for v in shown[column]]
    shown["hdd/real"] = [f"{float(v):.2f}" for v in shown["hdd/real"]]
    return shown.reset_index(drop=True)


def disk_answer_markdown(ratios: pd.DataFrame, advice: list[DiskAdvice]) -> list[str]:
    """The HDD/real table and each disk's advice; nothing where the rows hold neither."""
    lines: list[str] = []
    if advice:
        lines += [f"### {ADVICE_TITLE}", ""]
        lines += [f"- {line}" for disk in advice for line in disk.lines()]
        lines.append("")
    if not ratios.empty:
        shown = ratio_text(ratios)
        lines += [f"### {RATIO_TITLE}", "", f"_{RATIO_NOTE}._", ""]
        lines.append("| " + " | ".join(shown.columns) + " |")
        lines.append(
            "|" + "|".join("---" if i < 5 else "---:" for i in range(shown.shape[1])) + "|"
        )
        lines += [
            "| " + " | ".join(str(v) for v in row) + " |" for row in shown.itertuples(index=False)
        ]
        lines.append("")
    return lines


def disk_answer_html(ratios: pd.DataFrame, advice: list[DiskAdvice]) -> str:
    parts: list[str] = []
    if advice:
        items = "".join(f"<li>{escape(line)}</li>" for disk in advice for line in disk.lines())
        parts += [f"<h2>{escape(ADVICE_TITLE)}</h2>", f"<ul>{items}</ul>"]
    if not ratios.empty:
        shown = ratio_text(ratios)
        head = "".join(f"<th>{escape(str(c))}</th>" for c in shown.columns)
        body = "".join(
            "<tr>" + "".join(f"<td>{escape(str(v))}</td>" for v in row) + "</tr>"
            for row in shown.itertuples(index=False)
        )
        parts += [f"<h2>{escape(RATIO_TITLE)}</h2>", f"<p>{escape(RATIO_NOTE)}.</p>"]
        parts.append(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
    return "".join(parts)
