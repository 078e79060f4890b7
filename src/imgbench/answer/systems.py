"""Each system at its best: per machine, dataset, task (and, for classification, output size),
one line per system a user can pick (DALI, tf.data, SPDL, the DataLoader, ...), at its best row,
beside the answer's pick.

A loader row's system is its ``system`` column (rows from before the column: its ``library``);
how it was built is its ``configured_as`` (``same-recipe``: imgbench's own pipeline, the same
parts in every loader; ``as-documented``: built as the system's own authors' example builds it,
``configured_from`` naming the example; null = same-recipe) and ``crop_decode`` (``roi``: the
decoder decodes only the crop's window). The rows that count are the answer's own: for
classification, the candidates of :func:`imgbench.answer.answers` (the head-to-head final's
figures where it re-measured a row), for the other tasks the rows
:func:`imgbench.answer.task_answers` ranks; experiments, decode-only rows and other tasks' rows
never count. Figures and intervals are the answer's (``imgbench.answer.intervals``); a system
ties with the pick when the 95% interval of its images/s over the pick's holds 1.0, the rule
``imgbench.answer.ties`` applies to the fastest.

A system's line is its fastest row; the pick's own system is shown at the pick (which always
ties with its system's fastest: the pick ties with the fastest of all). "What gave its best"
says, for an as-documented best, how much faster it is than the system's same-recipe best
("as documented (region-of-interest decode): +13% over its same-recipe best"); for a same-recipe
best, the parameters that tell it from the system's other same-recipe rows, and the
as-documented row's standing where one was measured.

:func:`figure_places` is the one rounding rule for figures with an interval (the report, the
Overview and the Loaders page): at most three significant figures, and no digit finer than the
leading digit of the interval's width.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from imgbench.answer.intervals import Interval, Ratio, ratio
from imgbench.answer.measured import FINAL, MATRIX, Measured
from imgbench.answer.recommend import Answer, _group_label, _measured, _ranked, answers
from imgbench.answer.rows import (
    CLASSIFICATION,
    Row,
    by_machine_and_dataset,
    is_decode_only,
    is_experiment,
    newest_per_case,
    number,
    task_of,
    where,
)
from imgbench.answer.tasks import TASK_OUTPUT, TaskAnswer, task_answers

SAME_RECIPE, AS_DOCUMENTED = "same-recipe", "as-documented"
ROI = "roi"  # crop_decode: the decoder decodes only the crop's window
TITLE = "Each system at its best"
COLUMNS = (
    "system",
    "configured as",
    "images/s (95% interval)",
    "× the pick (95% interval)",
    "what gave its best",
    "row",
)
MOST_SIGNIFICANT = 3  # a figure keeps at most this many significant figures
LEAST_SIGNIFICANT = 2  # ... and at least this many, however wide its interval
SHOWN_PARAMETERS = 3  # the parameters named for a same-recipe best
# the parameters that tell two rows of one system apart, in the order they are named
PARAMETER_ORDER = ("workers", "decoder", "format", "pipeline", "batch_size", "start_method")


def figure_places(value: Any, low: Any = None, high: Any = None) -> int:
    """The decimal places a figure keeps (negative: tens, hundreds): at most
    ``MOST_SIGNIFICANT`` significant figures, no digit finer than the leading digit of its
    interval's width (``high - low``), and at least ``LEAST_SIGNIFICANT`` significant figures.
    ``342.1081`` keeps 0 (342); with an interval 330-355 it keeps -1 (340)."""
    found = number(value)
    if found is None or found == 0:
        return 0
    magnitude = math.floor(math.log10(abs(found)))
    places = MOST_SIGNIFICANT - 1 - magnitude
    lo, hi = number(low), number(high)
    if lo is not None and hi is not None and hi > lo:
        places = min(places, -math.floor(math.log10(hi - lo)))
    return max(places, LEAST_SIGNIFICANT - 1 - magnitude)


def round_figure(value: Any, places: int) -> float | None:
    """``value`` rounded to ``places`` decimal places (None when it is no finite number)."""
    found = number(value)
    return None if found is None else float(round(found, places))


def figure_text(value: float, low: float | None = None, high: float | None = None) -> str:
    """``340 (330-360)``: the figure and its interval, rounded by :func:`figure_places`."""
    places = figure_places(value, low, high)
    digits = max(places, 0)

    def text(x: float) -> str:
        return f"{round(x, places):,.{digits}f}"

    if low is None or high is None:
        return text(value)
    return f"{text(value)} ({text(low)}-{text(high)})"


def interval_text(measured: Measured) -> str:
    """A candidate's images/s with its interval, rounded to what the interval supports."""
    found: Interval | None = measured.interval
    if found is None:
        return figure_text(measured.images_per_s)
    return figure_text(found.value, found.low, found.high)


def system_of(row: Row) -> str:
    """The system a user picks: the row's ``system``, else (older rows) its ``library``."""
    system = row.get("system")
    if isinstance(system, str) and system:
        return system
    return str(row.get("library") or "?")


def configured_as(row: Row) -> str:
    """``as-documented``, or ``same-recipe`` (also for rows from before the column)."""
    return AS_DOCUMENTED if row.get("configured_as") == AS_DOCUMENTED else SAME_RECIPE


def _text(row: Row, column: str) -> str | None:
    value = row.get(column)
    return value if isinstance(value, str) and value else None


def _percent(a: Measured, b: Measured) -> str:
    """``+13%``: a's images/s over b's."""
    return f"{a.images_per_s / b.images_per_s - 1:+.0%}"


def _noise(a: Measured, b: Measured) -> str:
    """`` (within the noise)`` when the interval of a over b holds 1.0 (the tie rule), else ''."""
    found = ratio(a.interval, b.interval) if a.interval and b.interval else None
    return " (within the noise)" if found is not None and not found.supported else ""


@dataclass(frozen=True)
class SystemBest:
    """One system at its best row, against the answer's pick."""

    system: str
    measured: Measured
    configured_as: str  # SAME_RECIPE or AS_DOCUMENTED
    configured_from: str | None  # the example an as-documented row follows
    crop_decode: str | None
    versus_pick: Ratio | None  # its images/s over the pick's, with the 95% interval
    is_pick: bool
    change: str  # what gave it its best, against its same-recipe best
    rows: int  # the system's rows that counted

    @property
    def ties_with_pick(self) -> bool:
        """The measurements support no difference from the pick (the answer's tie rule)."""
        return self.is_pick or (self.versus_pick is not None and not self.versus_pick.supported)

    def configured_text(self) -> str:
        """``same recipe``, or ``as documented: DALI's ResNet-50 example``."""
        if self.configured_as != AS_DOCUMENTED:
            return "same recipe"
        return "as documented" + (f": {self.configured_from}" if self.configured_from else "")

    def versus_text(self) -> str:
        """``the pick``, ``0.85x (0.76-0.95x)``, ``0.97x (0.88-1.07x), tie``."""
        if self.is_pick:
            return "the pick"
        found = self.versus_pick
        if found is None:
            return "no pick to compare with"
        text = f"{found.factor:.2f}x ({found.low:.2f}-{found.high:.2f}x)"
        return text + (", tie" if self.ties_with_pick else "")

    def record(self) -> dict[str, str]:
        """The line as text cells, keyed by ``COLUMNS``."""
        return dict(
            zip(
                COLUMNS,
                (
                    self.system,
                    self.configured_text(),
                    interval_text(self.measured),
                    self.versus_text(),
                    self.change,
                    self.measured.cite(),
                ),
                strict=True,
            )
        )


@dataclass
class SystemsTable:
    """Each system at its best on one machine, dataset, task and output."""

    task: str
    machine: str
    machine_id: str
    dataset: str
    dataset_fingerprint: str
    output: str
    pick: Measured | None
    systems: list[SystemBest] = field(default_factory=list)

    @property
    def title(self) -> str:
        return f"{self.task}: {self.machine} · {self.dataset} (output {self.output})"

    def caption(self) -> str:
        """What the table holds, in one sentence."""
        count = f"{len(self.systems)} system{'s' if len(self.systems) != 1 else ''}"
        return (
            f"{count}, each at its fastest row (the pick's system at the pick), against the "
            "answer's pick; images/s with the answer's 95% intervals, rounded to what they "
            "support; a tie: the 95% interval of the ratio holds 1.0"
        )

    def records(self) -> list[dict[str, str]]:
        return [s.record() for s in self.systems]

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame(self.records(), columns=list(COLUMNS))


def _parameters(best: Measured, others: Sequence[Measured]) -> list[str]:
    """The parameters whose values differ among ``best`` and ``others``, with best's values."""
    every = [best, *others]
    params = [
        {
            **dict(m.params),
            "knobs": "+".join(m.configuration.knobs),
            "workers": str(m.configuration.workers),
        }
        for m in every
    ]
    keys = [
        k for k in sorted({k for p in params for k in p}) if len({p.get(k) for p in params}) > 1
    ]
    keys.sort(key=lambda k: (PARAMETER_ORDER.index(k) if k in PARAMETER_ORDER else 99, k))
    own = params[0]
    named = [f"{k} {own.get(k) or '-'}" for k in keys[:SHOWN_PARAMETERS]]
    if len(keys) > SHOWN_PARAMETERS:
        named.append(f"{len(keys) - SHOWN_PARAMETERS} more")
    return named


def _change(
    shown: Measured, same: list[Measured], documented: list[Measured], rows: Mapping[str, Row]
) -> str:
    """What gave ``shown`` its place: against the same-recipe best, or what tells it apart."""

    def detail(m: Measured) -> str:
        row = _row_of(m, rows)
        return " (region-of-interest decode)" if row and row.get("crop_decode") == ROI else ""

    if any(m is shown for m in documented):
        if not same:
            return f"as documented{detail(shown)}; no same-recipe row measured"
        return (
            f"as documented{detail(shown)}: {_percent(shown, same[0])} over its same-recipe "
            f"best{_noise(shown, same[0])}"
        )
    others = [m for m in same if m is not shown]
    if not others:
        text = "same recipe: its only same-recipe configuration measured"
    else:
        named = _parameters(shown, others)
        text = "same recipe at " + ", ".join(named) if named else "same recipe"
    if documented:
        text += (
            f"; as documented{detail(documented[0])}: {_percent(documented[0], shown)}"
            f"{_noise(documented[0], shown)}"
        )
    return text


def _row_of(measured: Measured, rows: Mapping[str, Row]) -> Row | None:
    """The loader row behind a candidate (a final's figure: the matrix row it re-measured)."""
    found = rows.get(measured.matrix_case_id or measured.case_id)
    return found if found is not None else rows.get(measured.case_id)


def _lines(
    candidates: Sequence[Measured], pick: Measured | None, rows: Mapping[str, Row]
) -> list[SystemBest]:
    """One line per system of ``candidates`` (best median first within each)."""
    systems: dict[str, list[Measured]] = {}
    for m in _ranked(list(candidates)):
        row = _row_of(m, rows)
        systems.setdefault(
            system_of(row) if row is not None else m.configuration.loader, []
        ).append(m)
    lines = []
    for system, found in systems.items():
        # as the answer: the final's figures where the final measured the system, else the matrix's
        pool = [m for m in found if m.source == FINAL] or found
        shown = pick if pick is not None and any(m is pick for m in pool) else pool[0]

        def how(m: Measured) -> str:
            row = _row_of(m, rows)
            return configured_as(row) if row is not None else SAME_RECIPE

        same = [m for m in pool if how(m) == SAME_RECIPE] or [
            m for m in found if how(m) == SAME_RECIPE
        ]
        documented = [m for m in pool if how(m) == AS_DOCUMENTED] or [
            m for m in found if how(m) == AS_DOCUMENTED
        ]
        row = _row_of(shown, rows)
        versus = None
        if pick is not None and shown is not pick:
            if shown.interval is not None and pick.interval is not None:
                versus = ratio(shown.interval, pick.interval)
            elif pick.images_per_s > 0:
                factor = shown.images_per_s / pick.images_per_s
                versus = Ratio(factor, factor, factor)
        lines.append(
            SystemBest(
                system=system,
                measured=shown,
                configured_as=how(shown),
                configured_from=_text(row, "configured_from") if row is not None else None,
                crop_decode=_text(row, "crop_decode") if row is not None else None,
                versus_pick=versus,
                is_pick=pick is not None and shown is pick,
                change=_change(shown, same, documented, rows),
                rows=len(found),
            )
        )
    return sorted(lines, key=lambda s: s.measured.images_per_s, reverse=True)


def _task_candidates(rows: pd.DataFrame) -> list[Measured]:
    """A task's candidates as ``task_answers`` ranks them: the newest row of each case."""
    medians = rows.groupby("case_id")["images_per_s_median"].apply(lambda v: [float(x) for x in v])
    return _ranked(
        [
            _measured(row, medians[str(row["case_id"])], MATRIX)
            for _, row in newest_per_case(rows).iterrows()
        ]
    )


def systems_tables(
    frame: pd.DataFrame,
    found: Sequence[Answer] | None = None,
    tasks: Sequence[TaskAnswer] | None = None,
) -> list[SystemsTable]:
    """Each system at its best, one table per machine, dataset, task and (classification)
    output size, in the answers' order then the tasks'. ``found`` and ``tasks``: the answers
    already computed from ``frame`` (``answers(frame)``, ``task_answers(frame)``), else computed."""
    found = answers(frame) if found is None else found
    tasks = task_answers(frame) if tasks is None else tasks
    tables: list[SystemsTable] = []
    task_tables: list[SystemsTable] = []
    for group in by_machine_and_dataset(frame):
        loaders = group[where(group, lambda r: r.get("stage") == "loader" and not is_experiment(r))]
        if loaders.empty:
            continue
        first = group.iloc[0]
        machine_id, fingerprint = str(first["machine_id"]), str(first["dataset_fingerprint"])
        machine = _group_label(group, "hostname", "machine_id")
        dataset = _group_label(group, "dataset_name", "dataset_fingerprint")
        rows: dict[str, Row] = {
            str(r["case_id"]): r for r in newest_per_case(loaders).to_dict("records")
        }
        for answer in found:
            if (answer.machine_id, answer.dataset_fingerprint) != (machine_id, fingerprint):
                continue
            if answer.best is None or not answer.candidates:
                continue
            table = SystemsTable(
                CLASSIFICATION,
                machine,
                machine_id,
                dataset,
                fingerprint,
                answer.output,
                answer.best,
            )
            table.systems = _lines(answer.candidates, answer.best, rows)
            tables.append(table)
        labelled = loaders.assign(_task=[task_of(r) for r in loaders.to_dict("records")])
        for task, own in labelled.groupby("_task", sort=True):
            if task == CLASSIFICATION:
                continue
            own = own.drop(columns="_task")
            own = own[~where(own, is_decode_only)] if not own.empty else own
            if own.empty:
                continue
            candidates = _task_candidates(own)
            answer_of = next(
                (t for t in tasks if (t.task, t.machine, t.dataset) == (task, machine, dataset)),
                None,
            )
            # the task answer's pick is one of these candidates (the same newest rows)
            pick = None
            if answer_of is not None:
                pick = next((m for m in candidates if m.case_id == answer_of.best.case_id), None)
            table = SystemsTable(
                str(task),
                machine,
                machine_id,
                dataset,
                fingerprint,
                TASK_OUTPUT.get(str(task), "?"),
                pick,
            )
            table.systems = _lines(candidates, pick, rows)
            task_tables.append(table)
    return tables + task_tables


def tables_for(
    tables: Sequence[SystemsTable],
    task: str,
    machine_id: str | None = None,
    dataset_fingerprint: str | None = None,
    output: str | None = None,
) -> list[SystemsTable]:
    """The tables of one task (and machine, dataset, output where given)."""
    return [
        t
        for t in tables
        if t.task == task
        and machine_id in (None, t.machine_id)
        and dataset_fingerprint in (None, t.dataset_fingerprint)
        and output in (None, t.output)
    ]
