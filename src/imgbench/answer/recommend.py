"""The answer: per machine and dataset, the loader configuration to use, its speed-up over the
common default, what bounds it and what to try next; experiments and ceilings as references.

One function, :func:`answers`, that the dashboard's Overview, ``imgbench report`` and
``imgbench advise`` share. It never pools machines, datasets or output sizes: each combination
present in the rows gets its own :class:`Answer`, or a line saying what is missing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from imgbench.answer.bound import Bound, bounding_stage, next_step
from imgbench.answer.rows import (
    Configuration,
    Row,
    by_machine_and_dataset,
    is_decode_only,
    is_experiment,
    is_full_scale_ceiling,
    number,
    output_side,
    where,
)
from imgbench.results.schema import json_object

LOADER_HINT = "`imgbench run -k loader` (or `make bench`)"
CEILING_STAGES = {"native": "native decode (tjbench)", "format": "raw sequential file read"}


@dataclass(frozen=True)
class Measured:
    """One row's figure, with what identifies the row: every number is traceable."""

    configuration: Configuration
    images_per_s: float
    case_id: str
    run_id: str
    memory_bytes: float | None  # peak summed PSS of the loader's processes (RSS when absent)

    def cite(self) -> str:
        return f"{self.case_id} in run {self.run_id}"


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

    @property
    def title(self) -> str:
        return f"{self.machine} · {self.dataset} ({self.codec or '?'}, output {self.output})"

    def speedup(self, default: Measured | None) -> float | None:
        if self.best is None or default is None or default.images_per_s <= 0:
            return None
        return self.best.images_per_s / default.images_per_s

    def evidence(self) -> list[Evidence]:
        """What bounds the answer, what to try next, and the rows behind it: one list that the
        Overview, the HTML and the Markdown report each format."""
        items: list[Evidence] = []
        if self.bound is not None:
            items.append(Evidence("What bounds it", f"{self.bound.text}."))
        if self.next_step:
            items.append(Evidence("Next thing to try", f"{self.next_step}."))
        if self.best is not None:
            items.append(Evidence("Rows", "recommended", self.best.cite()))
        for default in (self.default_0, self.default_cores):
            if default is not None:
                items.append(
                    Evidence(
                        None,
                        f"common default at {default.configuration.workers} workers: "
                        f"{default.images_per_s:,.0f} images/s,",
                        default.cite(),
                    )
                )
        return items

    def headline(self) -> str:
        """One sentence a user can act on, or what is missing."""
        if self.best is None:
            return "No answer: " + "; ".join(self.missing)
        text = (
            f"Use {self.best.configuration.label()}: {self.best.images_per_s:,.0f} images/s end to "
            "end"
        )
        speedups = [
            f"{factor:.1f}x the common default at {default.configuration.workers} workers"
            for default in (self.default_0, self.default_cores)
            if default is not None and (factor := self.speedup(default)) is not None
        ]
        if speedups:
            text += " (" + ", ".join(speedups) + ")"
        return text + "."


def _measured(row: Row) -> Measured:
    extra = json_object(row.get("extra_json"))
    memory = number(extra.get("peak_pss_bytes")) or number(row.get("peak_rss_bytes"))
    return Measured(
        configuration=Configuration.of(row),
        images_per_s=float(row["images_per_s_median"]),
        case_id=str(row["case_id"]),
        run_id=str(row["run_id"]),
        memory_bytes=memory,
    )


def _latest(rows: pd.DataFrame) -> pd.DataFrame:
    """The newest row of each case (one run's figure, not a pool of runs)."""
    if rows.empty:
        return rows
    return rows.sort_values("created_utc", kind="stable").groupby("case_id").tail(1)


def _group_label(rows: pd.DataFrame, column: str, detail: str) -> str:
    first = rows.iloc[0]
    value, extra = first.get(column), first.get(detail)
    value = value if isinstance(value, str) and value else "?"
    return f"{value} · {extra}" if isinstance(extra, str) and extra else value


def references(group: pd.DataFrame, loaders: pd.DataFrame, codec: str | None) -> list[Reference]:
    """Experiments (the loader rows that are no pipeline) and full-scale ceilings of the group."""
    refs = []
    experiments = loaders[where(loaders, is_experiment)]
    for _, row in _latest(experiments).iterrows():
        params = json_object(row["params_json"])
        if "accelerator_images_per_s" in params:
            note = (
                f"AU emulation: the loader feeding an emulated accelerator of "
                f"{params['accelerator_images_per_s']} images/s (its rate, not the loader's)"
            )
        else:
            note = "an experiment: it measures memory behaviour, not a pipeline (no decoding)"
        refs.append(
            Reference(
                "experiment",
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
    for _, row in _latest(ceilings).iterrows():
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
    real = loaders[where(loaders, lambda r: not is_experiment(r) and output_side(r) == side)]
    answer.references = references(group, loaders, answer.codec)
    real = _latest(real)
    if real.empty:
        answer.missing.append(f"no loader rows on this machine and dataset: run {LOADER_HINT}")
        return answer
    real = real.sort_values("images_per_s_median", ascending=False, kind="stable")
    answer.candidates = [_measured(row) for _, row in real.iterrows()]
    best_row = real.iloc[0]
    answer.best = answer.candidates[0]
    config = answer.best.configuration
    extra = json_object(best_row.get("extra_json"))
    answer.bound = bounding_stage(extra, config, answer.cores)
    times = {str(k): number(v) for k, v in json_object(extra.get("stage_times_s")).items()}
    answer.stage_times_ms = {k: 1e3 * v for k, v in times.items() if v is not None}
    measured_workers = max(c.configuration.workers for c in answer.candidates)
    answer.next_step = next_step(
        answer.bound, config, group, answer.codec, answer.cores, measured_workers
    )
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
            where(group, lambda r: r.get("stage") == "loader" and not is_decode_only(r))
        ]
        sides = {output_side(row) for _, row in loaders.iterrows()}
        training = sorted((s for s in sides if s), reverse=True)
        sizes: list[int | None] = list(training) or [None]
        for side in sizes:
            result.append(_answer_for(group, loaders, side))
    result.sort(key=lambda a: newest[(a.machine_id, a.dataset_fingerprint)], reverse=True)
    return result
