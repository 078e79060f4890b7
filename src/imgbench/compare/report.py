"""The comparison as a terminal table, Markdown (PR comment, job summary) and JSON.

Every report says which metrics were tested on raw samples and which were judged by the
threshold alone, names the regressed cases first, and ends with the geometric mean of ratios.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from imgbench.atomic import atomic_file
from imgbench.compare.machines import FIGURES, NOISE, MachineComparison
from imgbench.compare.stats import (
    IMPROVED,
    METHOD_TEST,
    METHOD_THRESHOLD,
    REGRESSED,
    UNCHANGED,
    ComparisonResult,
)

PRIMARY_METRIC = "images_per_s_median"
# shown for every case: its throughput (wall rows) or its instruction count (counted rows)
PRIMARY_METRICS = (PRIMARY_METRIC, "instructions_per_image")
# the same round times as images/s, scaled: shown only with --all / in the details
TWINS = ("mb_per_s_median", "megapixels_per_s_median")
# metric -> (short label with unit, scale of the shown value)
_UNITS = {
    "images_per_s_median": ("images/s", 1.0),
    "mb_per_s_median": ("MB/s", 1.0),
    "megapixels_per_s_median": ("MP/s", 1.0),
    "latency_ms_median": ("latency p50 ms", 1.0),
    "latency_ms_p90": ("latency p90 ms", 1.0),
    "latency_ms_p99": ("latency p99 ms", 1.0),
    "peak_rss_bytes": ("peak RSS MB", 1e-6),
    "instructions_per_image": ("instructions/image", 1.0),
}


def case_verdicts(result: ComparisonResult) -> pd.Series:
    """One verdict per case: regressed if any gating metric regressed, else improved if any did."""
    rows = result.rows[result.rows["gating"].astype(bool)]
    verdicts: dict[str, str] = {}
    for case_id, group in rows.groupby("case_id", sort=True):
        found = set(group["verdict"])
        verdicts[str(case_id)] = (
            REGRESSED if REGRESSED in found else IMPROVED if IMPROVED in found else UNCHANGED
        )
    return pd.Series(verdicts, dtype=object)


def counts(result: ComparisonResult) -> dict[str, int]:
    verdicts = case_verdicts(result)
    return {v: int((verdicts == v).sum()) for v in (REGRESSED, IMPROVED, UNCHANGED)}


def _label(metric: str) -> str:
    return _UNITS.get(metric, (metric, 1.0))[0]


def _value(metric: str, value: float) -> str:
    v = value * _UNITS.get(metric, ("", 1.0))[1]
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:,.3g}"


def _ratio(row: Any) -> str:
    text = f"{row.ratio:.3f}"
    if not math.isnan(row.ci_low):
        text += f" [{row.ci_low:.3f}, {row.ci_high:.3f}]"
    return text


def _change(row: Any) -> str:
    """Signed change of the metric, e.g. '-9.1% images/s'."""
    return f"{(row.ratio - 1) * 100:+.1f}%"


def _p(row: Any) -> str:
    if row.method == METHOD_THRESHOLD:
        return "threshold only"
    worse = row.p_worse_adjusted
    better = row.p_better_adjusted
    p = worse if row.verdict != IMPROVED and worse <= better else better
    return f"{p:.2g}"


def _shown_rows(result: ComparisonResult, everything: bool) -> pd.DataFrame:
    """Everything, or: the primary metric of every case and the other gating metrics that moved."""
    rows = result.rows
    if not everything:
        moved = (
            (rows["verdict"] != UNCHANGED)
            & rows["gating"].astype(bool)
            & ~rows["metric"].isin(TWINS)
        )
        rows = rows[rows["metric"].isin(PRIMARY_METRICS) | moved]
    order = {REGRESSED: 0, IMPROVED: 1, UNCHANGED: 2}
    rows = rows.assign(
        _order=rows["verdict"].map(order).astype(float) + (~rows["gating"].astype(bool)) * 0.5,
    )
    return rows.sort_values(["_order", "case_id", "metric"]).drop(columns="_order")


def _side_line(name: str, side: dict[str, Any], label: str) -> str:
    commit = ", ".join(c[:10] for c in side["git_commit"]) or "unknown commit"
    if side["git_dirty"]:
        commit += " (dirty)"
    runs = len(side["runs"])
    host = ", ".join(side["hostname"]) or "unknown host"
    dataset = ", ".join(side["dataset_name"]) or "unknown dataset"
    return f"{name}: {label} — {runs} run(s), commit {commit}, {host}, dataset {dataset}"


def _settings(result: ComparisonResult) -> str:
    cfg = result.config
    rule = "worse end of the CI" if cfg.decide_on == "ci" else "ratio of medians"
    return (
        f"regressed = one-sided Mann-Whitney U significant at alpha {cfg.alpha} after "
        f"{'Holm' if cfg.correction == 'holm' else 'Benjamini-Hochberg'} correction across "
        f"{result.rows['case_id'].nunique()} cases, and the {rule} worse than the threshold "
        f"(default {cfg.threshold:.0%}; {int(cfg.confidence * 100)}% bootstrap CI). Config: "
        f"{cfg.source}"
    )


def _power(row: Any) -> str:
    return "" if math.isnan(row.power) else f"{row.power:.0%}"


def power_note(result: ComparisonResult) -> str | None:
    """The wall-time gate's measured power at its threshold, and which verdicts block."""
    rows = result.rows
    minimum = result.config.min_power
    measured = rows[rows["power"].notna()] if len(rows) else rows
    parts: list[str] = []
    if len(measured):
        per_metric = []
        for metric, group in measured.groupby("metric", sort=False):
            power = group["power"].to_numpy(dtype=float)
            thresholds = "/".join(sorted({f"{t:.0%}" for t in group["threshold"]}))
            text = (
                f"{_label(str(metric))} at {thresholds}: median {np.median(power):.0%} "
                f"({power.min():.0%}-{power.max():.0%})"
            )
            if minimum is not None:
                text += f", {int((power >= minimum).sum())} of {len(power)} reach {minimum:.0%} and block"
            per_metric.append(text)
        parts.append(
            "wall-time power to catch a slowdown of the threshold (from the scatter of "
            f"{int(measured['n_baseline'].median())} runs a side): " + "; ".join(per_metric)
        )
    on_rounds = rows[rows["method"] == METHOD_TEST] if len(rows) else rows
    if minimum is not None and len(on_rounds):
        parts.append(
            f"{len(on_rounds)} case-metric(s) tested on the rounds of fewer than "
            f"{result.config.min_runs} runs a side: their power cannot be measured (the spread "
            "between runs is not sampled), so they are advisory"
        )
    return "; ".join(parts) or None


def _notes(result: ComparisonResult) -> list[str]:
    notes = list(result.warnings)
    if (line := power_note(result)) is not None:
        notes.append(line)
    advisory = sorted(set(result.config.advisory) & set(result.rows["metric"]))
    if advisory:
        moved = len(result.advisory_regressions)
        notes.append(
            f"advisory (reported, never fail the check): {', '.join(advisory)}; "
            f"{moved} over the threshold (see all rows)"
        )
    if result.ignored:
        notes += [f"ignored {case}: {reason}" for case, reason in sorted(result.ignored.items())]
    if result.only_in_baseline:
        notes.append(f"{len(result.only_in_baseline)} case(s) only in the baseline (not compared)")
    if result.only_in_candidate:
        notes.append(
            f"{len(result.only_in_candidate)} case(s) only in the candidate (not compared)"
        )
    return notes


def headline(result: ComparisonResult) -> str:
    c = counts(result)
    status = "REGRESSION" if result.exit_code else "OK"
    names = result.regressed_cases
    line = (
        f"{status}: {c[REGRESSED]} regressed, {c[IMPROVED]} improved, "
        f"{c[UNCHANGED]} unchanged of {sum(c.values())} cases"
    )
    if names:
        line += " — regressed: " + ", ".join(names)
    return line


def _explained(value: float) -> str:
    return "" if math.isnan(value) else f"{value:.0%}"


def _predicted(value: float) -> str:
    return "" if math.isnan(value) else f"{value:.3f}"


MACHINE_HEADER = ("case", *FIGURES.values())


def _machine_cells(row: Any, several: bool) -> tuple[str, ...]:
    """A configuration's cells; its dataset named where the sides held several."""
    return (
        f"{row.case_id} @ {row.dataset}" if several else row.case_id,
        str(row.parallel),
        f"{row.cores_busy:.2f}",
        f"{row.baseline:,.0f}",
        f"{row.candidate:,.0f}",
        f"{row.ratio:.3f}",
        _predicted(row.predicted),
        _explained(row.explained),
    )


def machines_shown(result: ComparisonResult, asked: bool) -> MachineComparison | None:
    """The machine comparison when its table is worth showing: asked for, or the sides ran on
    other machines or at another reference speed."""
    machines = result.machines
    if machines is None or machines.rows.empty:
        return None
    return machines if asked or machines.shown else None


def machine_line(result: ComparisonResult) -> str | None:
    """One line where the table is not shown: both sides at the same reference speed."""
    machines = result.machines
    if machines is None or machines.baseline is None or machines.candidate is None:
        return None
    one = machines.candidate.one / machines.baseline.one
    every = machines.candidate.every / machines.baseline.every
    return (
        f"machine reference: the same machine's speed on both sides (candidate / baseline: "
        f"{one:.2f}x on 1 thread, {every:.2f}x on every core; within {NOISE:.0%}); --machines "
        "shows the machine ratio per configuration"
    )


def _render_machines(machines: MachineComparison, console: Console) -> None:
    console.print(
        "machines: candidate / baseline per configuration, and how much of it the machine "
        "reference explains (docs/regression.md)",
        highlight=False,
    )
    table = Table(show_lines=False)
    for name in MACHINE_HEADER:
        table.add_column(name, justify="left" if name == "case" else "right", overflow="fold")
    several = machines.rows["dataset"].nunique() > 1
    for row in machines.rows.itertuples():
        cells = _machine_cells(row, several)
        table.add_row(escape(cells[0]), *cells[1:])
    console.print(table)
    for line in machines.summary():
        console.print(escape(line), highlight=False)


def render_terminal(
    result: ComparisonResult,
    console: Console,
    labels: tuple[str, str] = ("baseline", "candidate"),
    everything: bool = False,
    show_machines: bool = False,
) -> None:
    console.print(escape(_side_line("baseline", result.baseline, labels[0])), highlight=False)
    console.print(escape(_side_line("candidate", result.candidate, labels[1])), highlight=False)
    console.print(f"[dim]{escape(_settings(result))}[/]", highlight=False)
    table = Table(show_lines=False)
    table.add_column("case", overflow="fold", ratio=3)
    table.add_column("metric", overflow="fold", ratio=1)
    for name in ("baseline", "candidate", "ratio [CI]", "p (adj)", "power"):
        table.add_column(name, justify="right", overflow="fold")
    table.add_column("verdict", overflow="fold")
    style = {REGRESSED: "bold red", IMPROVED: "green", UNCHANGED: "dim"}
    for row in _shown_rows(result, everything).itertuples():
        verdict = row.verdict if row.gating else f"{row.verdict} (advisory)"
        table.add_row(
            escape(row.case_id),
            _label(row.metric),
            _value(row.metric, row.baseline),
            _value(row.metric, row.candidate),
            escape(_ratio(row)),
            _p(row).replace("threshold only", "threshold"),
            _power(row),
            f"[{style[row.verdict] if row.gating else 'yellow'}]{verdict}[/]",
        )
    console.print(table)
    geo = result.geomean()
    if not geo.empty:
        parts = [f"{r.metric} {r.geomean_ratio:.3f}" for r in geo.itertuples()]
        console.print("geometric mean of ratios (candidate/baseline): " + ", ".join(parts))
    machines = machines_shown(result, show_machines or everything)
    if machines is not None:
        _render_machines(machines, console)
    elif (line := machine_line(result)) is not None:
        console.print(f"[dim]{escape(line)}[/]", highlight=False)
    for note in _notes(result):
        console.print(f"[yellow]note:[/] {escape(note)}", highlight=False)
    colour = "red" if result.exit_code else "green"
    console.print(f"[bold {colour}]{escape(headline(result))}[/]", highlight=False)


def _md_table(rows: pd.DataFrame) -> list[str]:
    lines = [
        "| case | metric | baseline | candidate | ratio [95% CI] | change | p (adj) | power | "
        "verdict |",
        "|---|---|---:|---:|---|---:|---:|---:|---|",
    ]
    for row in rows.itertuples():
        verdict = row.verdict if row.gating else f"{row.verdict} (advisory)"
        icon = {REGRESSED: "🔴", IMPROVED: "🟢", UNCHANGED: "⚪"}[row.verdict]
        lines.append(
            f"| `{row.case_id}` | {_label(row.metric)} | {_value(row.metric, row.baseline)} | "
            f"{_value(row.metric, row.candidate)} | {_ratio(row)} | {_change(row)} | {_p(row)} | "
            f"{_power(row)} | {icon} {verdict} |"
        )
    return lines


def _md_machines(result: ComparisonResult) -> list[str]:
    """The machine comparison's section, where the terminal would show its table."""
    machines = machines_shown(result, asked=False)
    if machines is None:
        line = machine_line(result)
        return ["", f"- {line}"] if line else []
    lines = ["", "### Machines (candidate / baseline)", ""]
    lines += [f"- {line}" for line in machines.summary()]
    lines += [
        "",
        "| " + " | ".join(MACHINE_HEADER) + " |",
        "|---|" + "---:|" * (len(MACHINE_HEADER) - 1),
    ]
    several = machines.rows["dataset"].nunique() > 1
    for row in machines.rows.itertuples():
        cells = _machine_cells(row, several)
        lines.append(f"| `{cells[0]}` | " + " | ".join(cells[1:]) + " |")
    return lines


def machines_json(machines: MachineComparison | None) -> dict[str, Any] | None:
    """The machine comparison for the JSON report (null where no side had timed rows)."""
    if machines is None:
        return None
    pick = machines.pick_row()

    def reference(side: Any) -> dict[str, Any] | None:
        return None if side is None else {k: _clean(v) for k, v in side.__dict__.items()}

    return {
        "shown": machines.shown,
        "other_machines": machines.other_machines,
        "references_differ": machines.references_differ,
        "baseline_reference": reference(machines.baseline),
        "candidate_reference": reference(machines.candidate),
        "median_abs_error": machines.median_error(),
        "pick": None
        if pick is None
        else {"from": machines.pick_from, **{k: _clean(v) for k, v in pick.items()}},
        "not_comparable": machines.not_comparable,
        "notes": machines.notes,
        "rows": [{k: _clean(v) for k, v in r.items()} for r in machines.rows.to_dict("records")],
    }


def to_markdown(
    result: ComparisonResult, labels: tuple[str, str] = ("baseline", "candidate")
) -> str:
    status = "❌" if result.exit_code else "✅"
    lines = [
        f"## {status} imgbench regression check",
        "",
        f"**{headline(result)}**",
        "",
        f"- {_side_line('baseline', result.baseline, labels[0])}",
        f"- {_side_line('candidate', result.candidate, labels[1])}",
        f"- {_settings(result)}",
    ]
    lines += [f"- ⚠️ {note}" for note in _notes(result)]
    shown = _shown_rows(result, everything=False)
    changed = shown[shown["verdict"] != UNCHANGED]
    if len(changed):
        lines += ["", "### Changes", "", *_md_table(changed)]
    geo = result.geomean()
    if not geo.empty:
        lines += ["", "### Geometric mean of ratios (candidate / baseline)", ""]
        lines += ["| metric | cases | geometric mean |", "|---|---:|---:|"]
        lines += [f"| {r.metric} | {r.cases} | {r.geomean_ratio:.3f} |" for r in geo.itertuples()]
    lines += _md_machines(result)
    everything = _shown_rows(result, everything=True)
    lines += ["", "<details><summary>All cases and metrics</summary>", ""]
    lines += _md_table(everything)
    lines += ["", "</details>", ""]
    return "\n".join(lines)


def _clean(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    if hasattr(value, "item"):
        return _clean(value.item())
    return value


def to_json(result: ComparisonResult, labels: tuple[str, str] = ("baseline", "candidate")) -> dict:
    cfg = result.config
    return {
        "status": "regressed" if result.exit_code else "ok",
        "exit_code": result.exit_code,
        "summary": counts(result),
        "regressed_cases": result.regressed_cases,
        "baseline": {"label": labels[0], **result.baseline},
        "candidate": {"label": labels[1], **result.candidate},
        "config": {
            "threshold": cfg.threshold,
            "alpha": cfg.alpha,
            "correction": cfg.correction,
            "decide_on": cfg.decide_on,
            "confidence": cfg.confidence,
            "advisory": list(cfg.advisory),
            "min_power": cfg.min_power,
            "source": cfg.source,
        },
        "warnings": result.warnings,
        "power": power_note(result),
        "ignored": result.ignored,
        "only_in_baseline": result.only_in_baseline,
        "only_in_candidate": result.only_in_candidate,
        "geomean": [
            {k: _clean(v) for k, v in r.items()} for r in result.geomean().to_dict("records")
        ],
        "rows": [{k: _clean(v) for k, v in r.items()} for r in result.rows.to_dict("records")],
        "machines": machines_json(result.machines),
    }


def write_text_atomic(path: Path, text: str) -> None:
    """A reader never sees half a report."""
    with atomic_file(path, "w", encoding="utf-8") as handle:
        handle.write(text)


def write_reports(
    result: ComparisonResult,
    markdown: Path | None,
    json_path: Path | None,
    labels: tuple[str, str] = ("baseline", "candidate"),
) -> None:
    if markdown is not None:
        write_text_atomic(markdown, to_markdown(result, labels))
    if json_path is not None:
        write_text_atomic(json_path, json.dumps(to_json(result, labels), indent=2) + "\n")
