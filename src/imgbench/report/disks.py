"""The report's "Disks" section: per device the read and format rows' images/s beside iostat's
figures over their timed rounds (``imgbench.answer.disks``), in Markdown and in HTML."""

from __future__ import annotations

from html import escape

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
