"""The answer: per machine and dataset, the loader configuration to use, its speed-up over the
common default, what bounds it and what to try next; experiments and ceilings as references.

One function, :func:`answers`, that the dashboard's Overview, ``imgbench report`` and
``imgbench advise`` share. It never pools machines, datasets or output sizes: each combination
present in the rows gets its own :class:`Answer`, or a line saying what is missing. It reads
classification rows only: the other tasks' loader rows (segmentation, crop-ocr) get their own
short answer (``imgbench.answer.tasks``), never a place among these candidates.

Every figure carries a 95% interval (``imgbench.answer.intervals``); the candidates the
measurements cannot tell from the fastest form ``Answer.equivalent``, and the pick within it
follows a stated secondary rule (``imgbench.answer.ties``). Where the group has rows of the
head-to-head final (``stage == "final"``), its figures replace the matrix's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from imgbench.answer.bound import Bound, bounding_stage, next_step
from imgbench.answer.headroom import ceilings, distance_text, ranks_text
from imgbench.answer.intervals import (
    Ratio,
    own_cv,
    ratio,
    round_throughputs,
    row_interval,
    run_to_run_cv,
)
from imgbench.answer.measured import FINAL, MATRIX, Measured, distinct_labels
from imgbench.answer.rows import (
    REFERENCE_LOADER,
    Configuration,
    Row,
    by_machine_and_dataset,
    is_classification,
    is_decode_only,
    is_experiment,
    is_full_scale_ceiling,
    newest_per_case,
    number,
    output_side,
    where,
)
from imgbench.answer.ties import equivalent_to_fastest, extra_dependencies, pick, processes_of
from imgbench.results.schema import json_object

LOADER_HINT = "`imgbench run -k loader` (or `make bench`)"
CEILING_STAGES = {"native": "native decode (tjbench)", "format": "raw sequential file read"}
FINAL_STAGE = "final"  # the head-to-head final's rows (src/imgbench/final/)
FINAL_PREFIX = "final::"  # a final row's case_id: this + its matrix row's case_id
SHOWN_TIED = 4  # the headline names this many tied configurations, then counts the rest
RECOMMENDED, TIES, DEFAULT, MEASURED, MATRIX_ONLY = ROLES = (
    "recommended",
    "ties with it",
    "common default",
    "measured",
    "matrix only (not in the final)",
)


def _tie_count(n: int) -> str:
    """``1 configuration ties with it within the noise`` / ``3 configurations tie ...``."""
    return (
        "1 configuration ties with it within the noise"
        if n == 1
        else f"{n} configurations tie with it within the noise"
    )


@dataclass(frozen=True)
class Shown:
    """A candidate as the chart and the report's table show it: a label no other shares."""

    measured: Measured
    label: str
    role: str


@dataclass(frozen=True)
class Reference:
    """An experiment or a ceiling: shown beside the answer, never as a choice."""

    kind: str  # "experiment" | "ceiling"
    name: str
    images_per_s: float
    case_id: str
    note: str


@dataclass(frozen=True)
class Evidence:
    """One line under the answer: an optional bold label, its text, and the row it cites."""

    label: str | None
    text: str
    row: str | None = None


@dataclass
class Answer:
    """The answer for one machine, dataset and output size."""

    machine: str  # hostname · machine_id
    machine_id: str
    dataset: str  # dataset_name (fingerprint)
    dataset_fingerprint: str
    codec: str | None
    output: str  # "3x224x224", ...
    cores: int | None
    ram_bytes: float | None
    best: Measured | None = None
    bound: Bound | None = None
    stage_times_ms: dict[str, float] = field(default_factory=dict)  # the best row's, per image
    next_step: str | None = None
    default_0: Measured | None = None  # the common default at 0 workers
    default_cores: Measured | None = None  # ... at as many workers as cores
    candidates: list[Measured] = field(default_factory=list)  # every real configuration, best first
    references: list[Reference] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    # the candidates the measurements cannot tell from the fastest (best median first); ``best``
    # is picked within it by the secondary rule, which ``pick_rule`` states
    equivalent: list[Measured] = field(default_factory=list)
    fastest: Measured | None = None  # the highest median (``best`` when nothing ties with it)
    pick_rule: str | None = None
    final_rounds: int | None = None  # rounds of the head-to-head final behind the figures
    # the pick's distance to the in-RAM ceilings, and the cores divided among training ranks
    # (imgbench.answer.headroom); None where the rows have none
    headroom: str | None = None
    ranks_advice: str | None = None

    @property
    def tied(self) -> list[Measured]:
        """The equivalent set without the pick."""
        return [m for m in self.equivalent if m is not self.best]

    @property
    def matrix_only(self) -> list[Measured]:
        """Candidates the final did not re-measure (when there is a final)."""
        if self.final_rounds is None:
            return []
        return [m for m in self.candidates if m.source == MATRIX]

    @property
    def title(self) -> str:
        return f"{self.machine} · {self.dataset} ({self.codec or '?'}, output {self.output})"

    def role(self, measured: Measured) -> str:
        if measured is self.best:
            return RECOMMENDED
        if any(measured is m for m in self.equivalent):
            return TIES
        if measured is self.default_0 or measured is self.default_cores:
            return DEFAULT
        if self.final_rounds is not None and measured.source == MATRIX:
            return MATRIX_ONLY
        return MEASURED

    def shown(self, limit: int) -> list[Shown]:
        """The first ``limit`` candidates, then the tied set, the pick and the common default
        wherever they rank; labels from ``distinct_labels`` over every candidate."""
        labels = distinct_labels(self.candidates)
        keep = [
            (m, label)
            for index, (m, label) in enumerate(zip(self.candidates, labels, strict=True))
            if index < limit or self.role(m) in (RECOMMENDED, TIES, DEFAULT)
        ]
        return [Shown(m, label, self.role(m)) for m, label in keep]

    def speedup(self, default: Measured | None) -> float | None:
        if self.best is None or default is None or default.images_per_s <= 0:
            return None
        return self.best.images_per_s / default.images_per_s

    def speedup_interval(self, default: Measured | None) -> Ratio | None:
        """The pick over ``default`` with its 95% interval (each side's interval combined)."""
        if self.best is None or default is None:
            return None
        if self.best.interval is None or default.interval is None:
            factor = self.speedup(default)
            return None if factor is None else Ratio(factor, factor, factor)
        return ratio(self.best.interval, default.interval)

    def speedup_text(self, default: Measured | None, short: bool = False) -> str:
        """``4.5x (95% interval 4.1-4.9x)`` (``short``: ``4.5x (4.1-4.9x)``); "not measured"
        without a default."""
        found = self.speedup_interval(default)
        if found is None:
            return "not measured"
        return found.short() if short else found.text()

    def best_text(self) -> str:
        """The pick's images/s and interval for a metric tile: ``610 (580-640)``."""
        if self.best is None:
            return "not measured"
        if self.best.interval is None:
            return f"{self.best.images_per_s:,.0f}"
        return self.best.interval.short()

    def equivalence_text(self) -> str:
        """The tie rule's outcome, in words: the tied set and why the pick was picked."""
        if self.best is None:
            return ""
        tied = self.tied
        if not tied:
            return "no other configuration ties with it within the noise"
        names = [m.configuration.label() + f" ({m.figure()})" for m in tied[:SHOWN_TIED]]
        more = len(tied) - SHOWN_TIED
        listed = "; ".join(names) + (f"; and {more} more" if more > 0 else "")
        return f"{_tie_count(len(tied))}: {listed}; picked it because {self.pick_rule}"

    def provenance(self) -> str:
        """Where the figures come from: the head-to-head final, or one matrix run each."""
        if self.final_rounds is not None:
            only = len(self.matrix_only)
            return (
                f"confirmed head to head over {self.final_rounds} interleaved rounds (the final); "
                f"{only} configuration{'s' if only != 1 else ''} only in the matrix listed after"
            )
        return (
            "one matrix run per configuration: each interval is its rounds' 95% interval widened "
            "by the between-session spread measured for its kind of case (docs/dashboard.md)"
        )

    def evidence(self) -> list[Evidence]:
        """What bounds the answer, what to try next, and the rows behind it: one list that the
        Overview, the HTML and the Markdown report each format."""
        items: list[Evidence] = []
        if self.best is not None:
            items.append(Evidence("Ties", self.equivalence_text() + "."))
            items.append(Evidence("Figures", self.provenance() + "."))
        if self.bound is not None:
            items.append(Evidence("What bounds it", f"{self.bound.text}."))
        if self.next_step:
            items.append(Evidence("Next thing to try", f"{self.next_step}."))
        if self.headroom:
            items.append(Evidence("Nothing left to read", f"{self.headroom}."))
        if self.ranks_advice:
            items.append(Evidence("Training ranks", f"{self.ranks_advice}."))
        if self.best is not None:
            items.append(Evidence("Rows", "recommended", self.best.cite()))
        for default in (self.default_0, self.default_cores):
            if default is not None:
                items.append(
                    Evidence(
                        None,
                        f"common default at {default.configuration.workers} workers: "
                        f"{default.figure()},",
                        default.cite(),
                    )
                )
        return items

    def headline(self) -> str:
        """One sentence a user can act on, or what is missing."""
        if self.best is None:
            return "No answer: " + "; ".join(self.missing)
        text = f"Use {self.best.configuration.label()}: {self.best.figure()} end to end"
        speedups = []
        for default in (self.default_0, self.default_cores):
            found = self.speedup_interval(default)
            if default is None or found is None:
                continue
            workers = default.configuration.workers
            if found.supported or found.low == found.high:
                speedups.append(f"{found.text()} the common default at {workers} workers")
            else:
                speedups.append(
                    f"no faster than the common default at {workers} workers within the noise "
                    f"({found.text()})"
                )
        if speedups:
            text += " (" + ", ".join(speedups) + ")"
        if self.final_rounds is not None:
            text += f", confirmed head to head over {self.final_rounds} interleaved rounds"
        tied = self.tied
        if tied:
            names = ", ".join(m.configuration.label() for m in tied[:SHOWN_TIED])
            more = len(tied) - SHOWN_TIED
            names += f" and {more} more" if more > 0 else ""
            text += f"; {_tie_count(len(tied))}: {names}; picked it because {self.pick_rule}"
        return text + "."


def _memory(row: Row | None) -> float | None:
    if row is None:
        return None
    extra = json_object(row.get("extra_json"))
    return number(extra.get("peak_pss_bytes")) or number(row.get("peak_rss_bytes"))


def _worker_processes(config: Configuration) -> bool:
    """Without a memory timeline: whether the loader's workers are processes (by its name)."""
    return config.loader == REFERENCE_LOADER or any(
        "process" in part for part in (config.loader, *config.knobs)
    )


def _system(row: Row | None) -> str | None:
    """The row's ``system`` column (the system a user picks), or None where it has none."""
    value = row.get("system") if row is not None else None
    return value if isinstance(value, str) and value else None


def _measured(
    row: Row, medians: list[float], source: str = MATRIX, matrix: Row | None = None
) -> Measured:
    """A candidate from its row; ``medians``: every run's median of its case (its own spread
    from three on); ``matrix``: a final row's matrix row (what the final row lacks comes from it)."""
    config = Configuration.of(row)
    extra = json_object(row.get("extra_json"))
    matrix_extra = json_object(matrix.get("extra_json")) if matrix is not None else {}
    both = {**matrix_extra, **extra}
    stage = FINAL_STAGE if source == FINAL else str(row.get("stage") or "loader")
    cv = own_cv(medians) if source == MATRIX else None
    if cv is None:
        cv = run_to_run_cv(stage, config.workers)
    params = json_object(row.get("params_json"))
    return Measured(
        configuration=config,
        images_per_s=float(row["images_per_s_median"]),
        case_id=str(row["case_id"]),
        run_id=str(row["run_id"]),
        memory_bytes=_memory(row) or _memory(matrix),
        interval=row_interval(row, cv),
        rounds=int(round_throughputs(row).size),
        source=source,
        processes=processes_of(both, config, _worker_processes(config)),
        extra_dependencies=extra_dependencies(both, config),
        params=tuple(sorted((str(k), str(v)) for k, v in params.items())),
        matrix_case_id=str(matrix["case_id"]) if matrix is not None else None,
        # older rows have no system column (or null there): their library names the system
        system=_system(row) or _system(matrix) or config.loader,
    )


def _group_label(rows: pd.DataFrame, column: str, detail: str) -> str:
    first = rows.iloc[0]
    value, extra = first.get(column), first.get(detail)
    value = value if isinstance(value, str) and value else "?"
    return f"{value} · {extra}" if isinstance(extra, str) and extra else value


def references(group: pd.DataFrame, loaders: pd.DataFrame, codec: str | None) -> list[Reference]:
    """Experiments (the loader rows that are no pipeline) and full-scale ceilings of the group."""
    refs = []
    experiments = loaders[where(loaders, is_experiment)]
    for _, row in newest_per_case(experiments).iterrows():
        params = json_object(row["params_json"])
        kind = "ceiling" if "preload" in params else "experiment"
        if "accelerator_images_per_s" in params:
            note = (
                f"AU emulation: the loader feeding an emulated accelerator of "
                f"{params['accelerator_images_per_s']} images/s (its rate, not the loader's)"
            )
        elif "preload" in params:
            held = "decoded pixels" if params["preload"] == "decoded" else "encoded bytes"
            note = f"in-RAM ceiling: the pool's {held} in RAM before the first batch"
        elif "ranks" in params:
            note = f"{params['ranks']} training ranks' loaders at once: their total images/s"
        else:
            note = "an experiment: it measures memory behaviour, not a pipeline (no decoding)"
        refs.append(
            Reference(
                kind,
                f"{row['library']} · {row['variant']} · {int(number(row['workers']) or 0)} workers",
                float(row["images_per_s_median"]),
                str(row["case_id"]),
                note,
            )
        )

    def comparable_ceiling(row: Row) -> bool:
        same_codec = row.get("stage") != "native" or not codec or row.get("codec") == codec
        return is_full_scale_ceiling(row) and same_codec

    ceilings = group[where(group, comparable_ceiling)]
    for _, row in newest_per_case(ceilings).iterrows():
        refs.append(
            Reference(
                "ceiling",
                f"{CEILING_STAGES[str(row['stage'])]}: {row['library']} · {row['variant']}",
                float(row["images_per_s_median"]),
                str(row["case_id"]),
                "the hardware's ceiling for one step, one thread: not a configuration",
            )
        )
    return sorted(refs, key=lambda r: (r.kind, -r.images_per_s))


def _final_rows(group: pd.DataFrame, matrix: dict[str, Row]) -> dict[str, Row]:
    """The newest final's rows of the group, by the case_id of the matrix row each re-measured
    (the newest row of its case, measured before the final)."""
    finals = group[where(group, lambda r: r.get("stage") == FINAL_STAGE)]
    if finals.empty:
        return {}
    newest = finals.loc[finals["created_utc"].idxmax()]
    key = "run_group" if isinstance(newest.get("run_group"), str) else "run_id"
    finals = newest_per_case(finals[finals[key] == newest[key]])
    found: dict[str, Row] = {}
    for _, row in finals.iterrows():
        extra = json_object(row.get("extra_json"))
        case = str(row["case_id"])
        matrix_case = str(extra.get("matrix_case_id") or case.removeprefix(FINAL_PREFIX))
        # a final older than its case's newest matrix row re-measured an earlier run: not this one
        if matrix_case in matrix and row["created_utc"] >= matrix[matrix_case]["created_utc"]:
            found[matrix_case] = row
    return found


def _ranked(items: list[Measured]) -> list[Measured]:
    return sorted(items, key=lambda m: m.images_per_s, reverse=True)


def _answer_for(group: pd.DataFrame, loaders: pd.DataFrame, side: int | None) -> Answer:
    first = group.iloc[0]
    cores = number(first.get("cpu_cores_logical"))
    codec = first.get("dataset_codec")
    answer = Answer(
        machine=_group_label(group, "hostname", "machine_id"),
        machine_id=str(first.get("machine_id")),
        dataset=_group_label(group, "dataset_name", "dataset_fingerprint"),
        dataset_fingerprint=str(first.get("dataset_fingerprint")),
        codec=codec if isinstance(codec, str) else None,
        output=f"3x{side}x{side}" if side else "?",
        cores=int(cores) if cores else None,
        ram_bytes=number(first.get("ram_bytes")),
    )
    every_run = loaders[where(loaders, lambda r: not is_experiment(r) and output_side(r) == side)]
    answer.references = references(group, loaders, answer.codec)
    real = newest_per_case(every_run)
    if real.empty:
        answer.missing.append(f"no loader rows on this machine and dataset: run {LOADER_HINT}")
        return answer
    medians = every_run.groupby("case_id")["images_per_s_median"].apply(
        lambda v: [float(x) for x in v]
    )
    rows: dict[str, Row] = {str(row["case_id"]): row for _, row in real.iterrows()}
    finals = _final_rows(group, rows)
    final = _ranked([_measured(row, [], FINAL, rows[case]) for case, row in finals.items()])
    matrix = _ranked(
        [_measured(row, medians[case], MATRIX) for case, row in rows.items() if case not in finals]
    )
    answer.candidates = final + matrix
    contest = final or matrix
    if final:
        answer.final_rounds = max(m.rounds for m in final)
    answer.fastest = contest[0]
    answer.equivalent = equivalent_to_fastest(contest)
    chosen = pick(answer.equivalent)
    answer.best, answer.pick_rule = chosen.measured, chosen.rule
    config = answer.best.configuration
    final_row = finals.get(answer.best.matrix_case_id or "")
    best_row = final_row if final_row is not None else rows[answer.best.case_id]
    extra: dict[str, Any] = json_object(best_row.get("extra_json"))
    if "stage_times_s" not in extra and answer.best.matrix_case_id:
        extra = {**json_object(rows[answer.best.matrix_case_id].get("extra_json")), **extra}
    answer.bound = bounding_stage(extra, config, answer.cores)
    times = {str(k): number(v) for k, v in json_object(extra.get("stage_times_s")).items()}
    answer.stage_times_ms = {k: 1e3 * v for k, v in times.items() if v is not None}
    measured_workers = max(c.configuration.workers for c in answer.candidates)
    answer.next_step = next_step(
        answer.bound, config, group, answer.codec, answer.cores, measured_workers
    )
    answer.headroom = distance_text(answer.best.interval, ceilings(loaders))
    answer.ranks_advice = ranks_text(loaders, answer.cores)
    defaults = [c for c in answer.candidates if c.configuration.is_common_default]
    answer.default_0 = next((c for c in defaults if c.configuration.workers == 0), None)
    if answer.default_0 is None:
        answer.missing.append(
            "the common default (Pillow + image folder + torchvision + DataLoader) at 0 workers "
            f"was not measured: run {LOADER_HINT} with the default profile"
        )
    if answer.cores:
        answer.default_cores = next(
            (c for c in defaults if c.configuration.workers == answer.cores), None
        )
        if answer.default_cores is None:
            answer.missing.append(
                f"the common default at {answer.cores} workers (this machine's cores) was not "
                "measured"
            )
    return answer


def answers(frame: pd.DataFrame) -> list[Answer]:
    """One answer per machine, dataset and output size in ``frame`` (any statuses; only timed ok
    rows count), newest machine and dataset first. Empty when there is no timed ok row."""
    result = []
    newest = {}
    for group in by_machine_and_dataset(frame):
        first = group.iloc[0]
        newest[(first["machine_id"], first["dataset_fingerprint"])] = group["created_utc"].max()
        loaders = group[
            where(
                group,
                lambda r: (
                    r.get("stage") == "loader" and not is_decode_only(r) and is_classification(r)
                ),
            )
        ]
        sides = {output_side(row) for _, row in loaders.iterrows()}
        training = sorted((s for s in sides if s), reverse=True)
        sizes: list[int | None] = list(training) or [None]
        for side in sizes:
            result.append(_answer_for(group, loaders, side))
    result.sort(key=lambda a: newest[(a.machine_id, a.dataset_fingerprint)], reverse=True)
    return result
