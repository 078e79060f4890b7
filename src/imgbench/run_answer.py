"""The answer `imgbench run` ends with: for each machine, dataset and output size, at most ten
lines of `imgbench report --markdown` (the same wording: the pick, its images/s with interval,
the speed-ups with intervals, the ties, what bounds it), then the commands that show more."""

from __future__ import annotations

from pathlib import Path

from imgbench.report.cli import select_runs
from imgbench.results.store import load_results

MAX_LINES = 12  # per answer: its heading, headline, figures and every evidence line


def command_name() -> str:
    """``imgbench`` where that is on PATH and is this command, else the path it was run by
    (``.venv/bin/imgbench`` from `make bench`), so the line can be pasted as it is."""
    import os
    import shutil
    import sys

    ran = sys.argv[0] if sys.argv and Path(sys.argv[0]).name == "imgbench" else ""
    if not ran:
        return "imgbench"
    found = shutil.which("imgbench")
    if found is not None and Path(found).resolve() == Path(ran).resolve():
        return "imgbench"
    relative = os.path.relpath(ran)
    return ran if relative.startswith("..") else relative


def more_line(imgbench: str | None = None) -> str:
    """The commands that show more than the answer's lines."""
    cmd = imgbench or command_name()
    return (
        f"more: {cmd} report (the whole answer, one HTML file) · {cmd} dashboard · "
        f"{cmd} export --out train_loader.py (the pick as code)"
    )


def answer_sections(markdown: str, titles: list[str]) -> list[list[str]]:
    """Of a report's Markdown, each answer's heading, headline, figures and evidence (its
    candidate and reference tables left to the report), at most ``MAX_LINES`` lines each."""
    lines = markdown.splitlines()
    sections = []
    for title in titles:
        try:
            start = lines.index(f"### {title}")
        except ValueError:
            continue
        section = [lines[start]]
        for line in lines[start + 1 :]:
            if line.startswith(("### ", "| configuration |", "References, never")):
                break
            if line.strip():
                section.append(line)
        sections.append(section[:MAX_LINES])
    return sections


def run_answer_lines(results: str, group: str) -> list[str]:
    """The answer of one `imgbench run` (its run group) in the results folder; empty when its
    rows give none (no loader rows, e.g. -k read)."""
    from imgbench.report.document import build_report
    from imgbench.report.markdown import render_markdown

    loaded = load_results(results)
    if loaded.frame.empty:
        return []
    frame = select_runs(loaded.frame, [group])
    report = build_report(frame, loaded, results)
    titles = [a.title for a in report.answers]
    sections = answer_sections(render_markdown(report), titles)
    out: list[str] = []
    for section in sections:
        out += [*([""] if out else []), *section]
    return out
