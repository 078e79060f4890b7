"""Runs from two machines side by side: per configuration, the ratio of the machines and how much
of it the machine reference explains.

Every row carries its run's machine reference (``imgbench.measure.reference``): images/s of a
fixed decode-and-augment workload on one thread (``r1``) and in one single-threaded process per
usable CPU (``rall``, ``cores`` processes). A configuration that keeps ``p`` processes or threads
busy is set against the reference at ``p``, read on the line between the two points:

    ref(p) = r1 + (rall - r1) * (min(p, cores) - 1) / max(cores - 1, 1)

and the reference's predicted ratio of the machines is ``ref_B(p) / ref_A(p)`` (B the candidate,
A the baseline). ``explained`` is predicted over measured: 1.0 when the reference accounts for the
whole difference, 0.9 when the measured ratio is 10% further from 1 than the reference says.
``p`` is the cores the configuration kept busy, where its rows measured them (loader rows:
``cpu_cores_busy`` less ``background_cores_busy``), the more of the two sides: a configuration
that keeps 1.8 of 2 cores busy is read at 1.8, and where a quota or fewer cores cap it on one side
the other side shows what it asks for. Elsewhere ``p`` is the row's workers (a thread-pool
loader's threads are its workers), else its threads above one, else 1 (0 workers, every
one-thread reader and augmentation row, and a library's default threads, which a single decode
mostly leaves at one). Experiments (an emulated
accelerator's pace, the copy-on-access memory experiment) are no configuration here.

Rows pair only where stage, case id, dataset, library version and dataset fingerprint agree; a
configuration whose version or fingerprint differs is listed as not comparable, with which.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from imgbench.answer.rows import is_experiment, number, where
from imgbench.compare.config import case_matches
from imgbench.errors import one_line

NOISE = 0.10  # references closer than this are the same machine's speed: no table by default
CHECKED = ("library_version", "dataset_fingerprint")  # must agree for a pair (else: why not)
COLUMNS = [
    "case_id",
    "stage",
    "dataset",
    "parallel",
    "cores_busy",
    "baseline",
    "candidate",
    "ratio",
    "predicted",
    "explained",
]


# the table's figures, by column, as `imgbench compare` and the dashboard's Compare page label them
FIGURES = {
    "parallel": "parallel",
    "cores_busy": "cores busy",
    "baseline": "baseline images/s",
    "candidate": "candidate images/s",
    "ratio": "machine ratio",
    "predicted": "reference predicts",
    "explained": "reference explains",
}


def reference_at(one: float, every: float, cores: int, parallel: float) -> float:
    """The reference's images/s at ``parallel`` busy processes (cores kept busy; a fraction
    reads between two counts): linear from one thread (``one``) to every core (``every`` over
    ``cores`` processes), flat beyond ``cores``."""
    used = min(max(parallel, 1.0), max(cores, 1))
    return one + (every - one) * (used - 1) / max(cores - 1, 1)


@dataclass(frozen=True)
class Reference:
    """One side's reference figures (the median over its rows)."""

    workload: str
    one: float
    every: float
    cores: int

    def at(self, parallel: float) -> float:
        return reference_at(self.one, self.every, self.cores, parallel)

    def text(self) -> str:
        return f"{self.one:,.0f} images/s on 1 thread, {self.every:,.0f} in {self.cores} processes"


def parallel_units(row: pd.Series | dict[str, Any]) -> int:
    """Processes or threads the row's configuration keeps busy (see the module's docstring)."""
    for column in ("workers", "threads"):
        value = number(row.get(column))
        if value is not None and value >= 1:
            return int(value)
    return 1


def cores_busy(rows: pd.DataFrame) -> float | None:
    """Cores a loader configuration's own processes kept busy during its rounds (the median over
    its rows of ``cpu_cores_busy`` less ``background_cores_busy``, from ``extra_json``); None
    where the rows do not say."""
    found = []
    for text in rows["extra_json"].dropna() if "extra_json" in rows else []:
        try:
            extra = json.loads(text)
        except ValueError:
            continue
        busy = number(extra.get("cpu_cores_busy")) if isinstance(extra, dict) else None
        if busy is not None:
            found.append(busy - (number(extra.get("background_cores_busy")) or 0.0))
    return float(np.median(found)) if found else None


def demand(base: pd.DataFrame, cand: pd.DataFrame) -> float:
    """The cores the configuration keeps busy where it can: the more of the two sides' measured
    ``cores_busy`` (the side with fewer CPUs, or a quota, caps it), else its workers or threads.

    Under a one-CPU quota on two cores, the thread pool at two threads kept 1.78-1.84 cores busy
    unthrottled and 1.0 under the quota; read at 2, the reference (two processes, 2.0 cores)
    predicted a ratio 10-13% under the measured one in three runs of four (docs/regression.md)."""
    sides = [v for v in (cores_busy(base), cores_busy(cand)) if v is not None]
    return max(sides) if sides else float(parallel_units(base.iloc[0]))


def side_reference(rows: pd.DataFrame) -> Reference | None:
    """The reference the rows carry, when they carry one workload's figures."""
    if "reference_1_images_per_s" not in rows:
        return None
    carried = rows[
        pd.to_numeric(rows["reference_1_images_per_s"], errors="coerce").notna().to_numpy()
        & pd.to_numeric(rows["reference_all_images_per_s"], errors="coerce").notna().to_numpy()
    ]
    workloads = set(carried["reference_workload"].dropna().astype(str))
    if carried.empty or len(workloads) != 1:
        return None
    cores = pd.to_numeric(carried["reference_cores"], errors="coerce").dropna()
    return Reference(
        workload=workloads.pop(),
        one=float(pd.to_numeric(carried["reference_1_images_per_s"]).median()),
        every=float(pd.to_numeric(carried["reference_all_images_per_s"]).median()),
        cores=int(cores.median()) if len(cores) else 1,
    )


@dataclass
class MachineComparison:
    """Per configuration: both rates, the machines' ratio, the reference's prediction of it."""

    rows: pd.DataFrame
    baseline: Reference | None
    candidate: Reference | None
    other_machines: bool  # the sides' machine ids differ
    not_comparable: dict[str, str] = field(default_factory=dict)  # configuration -> what differs
    notes: list[str] = field(default_factory=list)
    pick: str | None = None  # the configuration the summary names
    pick_from: str = ""  # where it came from: the baseline's answer, or --case

    @property
    def references_differ(self) -> bool:
        """Whether the two references differ by more than ``NOISE`` in either figure."""
        if self.baseline is None or self.candidate is None:
            return False
        return any(
            abs(b / a - 1) > NOISE
            for a, b in (
                (self.baseline.one, self.candidate.one),
                (self.baseline.every, self.candidate.every),
            )
            if a > 0
        )

    @property
    def shown(self) -> bool:
        """Worth a table without being asked: other machines, or the same one at another speed
        (a CPU quota, a busier host)."""
        return self.other_machines or self.references_differ

    @property
    def predicted(self) -> pd.DataFrame:
        return self.rows[self.rows["predicted"].notna()] if len(self.rows) else self.rows

    def median_error(self) -> float | None:
        """The median over configurations of |explained - 1|."""
        found = self.predicted
        if found.empty:
            return None
        return float(np.median(np.abs(found["explained"].to_numpy(dtype=float) - 1)))

    def pick_row(self) -> pd.Series | None:
        if self.pick is None or self.rows.empty:
            return None
        found = self.rows[self.rows["case_id"] == self.pick]
        return None if found.empty else found.iloc[0]

    def summary(self) -> list[str]:
        """The lines under the table: both references, the median error, the pick's figures."""
        lines = []
        if self.baseline is not None and self.candidate is not None:
            lines.append(
                f"machine reference ({self.baseline.workload}): baseline {self.baseline.text()}; "
                f"candidate {self.candidate.text()}"
            )
        error = self.median_error()
        if error is not None:
            inside = int(
                (np.abs(self.predicted["explained"].to_numpy(dtype=float) - 1) <= NOISE).sum()
            )
            lines.append(
                f"the reference explains the machine ratio within {error:.1%} (median over "
                f"{len(self.predicted)} configurations; {inside} within {NOISE:.0%})"
            )
        row = self.pick_row()
        if row is not None:
            lines.append(f"{self.pick_from} ({row['case_id']}): {pick_text(row)}")
        elif self.pick_from:
            lines.append(f"{self.pick_from}: not compared")
        lines += self.notes
        lines += [f"not comparable: {c}: {why}" for c, why in sorted(self.not_comparable.items())]
        return lines


def pick_text(row: pd.Series) -> str:
    """``machine ratio 0.552, reference predicts 0.531: it explains 96% (error -3.8%)``."""
    text = f"machine ratio {row['ratio']:.3f}"
    if pd.isna(row["predicted"]):
        return text + ", no reference prediction"
    return (
        f"{text}, reference predicts {row['predicted']:.3f}: it explains "
        f"{row['explained']:.0%} (error {row['explained'] - 1:+.1%})"
    )


def _timed(frame: pd.DataFrame) -> pd.DataFrame:
    """Ok rows with a wall-time throughput."""
    rate = pd.to_numeric(frame["images_per_s_median"], errors="coerce")
    mask = (frame["status"] == "ok").to_numpy(dtype=bool, na_value=False)
    mask = mask & (rate > 0).to_numpy(dtype=bool)
    if "measure" in frame:
        mask = mask & (frame["measure"].fillna("wall") != "instructions").to_numpy(dtype=bool)
    return frame[mask]


def _configurations(frame: pd.DataFrame) -> dict[tuple[str, str, str], pd.DataFrame]:
    """The timed rows by configuration: stage, case id, dataset. Experiments are left out: an
    emulated accelerator's pace or a memory experiment sets their rate, not the CPU."""
    timed = _timed(frame)
    if not timed.empty:
        timed = timed[~where(timed, is_experiment)]
    if timed.empty:
        return {}
    keys = timed.assign(
        _stage=timed["stage"].fillna("?").astype(str),
        _dataset=timed["dataset_name"].fillna("?").astype(str),
    )
    return {
        (str(stage), str(case), str(dataset)): rows
        for (stage, case, dataset), rows in keys.groupby(
            ["_stage", "case_id", "_dataset"], sort=True
        )
    }


def _differs(base: pd.DataFrame, cand: pd.DataFrame) -> str | None:
    """Which of ``CHECKED`` differs between the sides' rows of one configuration, in words."""
    for column in CHECKED:
        ours = sorted({str(v) for v in base[column].dropna()})
        theirs = sorted({str(v) for v in cand[column].dropna()})
        if ours != theirs:
            return f"{column} {', '.join(ours) or 'none'} vs {', '.join(theirs) or 'none'}"
    return None


def _pair(identity: tuple[str, str, str], base: pd.DataFrame, cand: pd.DataFrame) -> dict[str, Any]:
    stage, case_id, dataset = identity
    parallel = parallel_units(base.iloc[0])
    busy = demand(base, cand)
    rate_b = float(pd.to_numeric(base["images_per_s_median"]).median())
    rate_c = float(pd.to_numeric(cand["images_per_s_median"]).median())
    row: dict[str, Any] = {
        "case_id": case_id,
        "stage": stage,
        "dataset": dataset,
        "parallel": parallel,
        "cores_busy": busy,
        "baseline": rate_b,
        "candidate": rate_c,
        "ratio": rate_c / rate_b,
        "predicted": math.nan,
        "explained": math.nan,
    }
    ours, theirs = side_reference(base), side_reference(cand)
    if ours is not None and theirs is not None and ours.workload == theirs.workload:
        row["predicted"] = theirs.at(busy) / ours.at(busy)
        row["explained"] = row["predicted"] / row["ratio"]
    return row


def _pick(baseline: pd.DataFrame, compared: list[str], case: str | None) -> tuple[str | None, str]:
    """The configuration the summary names: ``case`` (an id or a glob), else the baseline's
    answer's pick (its final row where the candidate has it too, else its matrix row)."""
    if case is not None:
        found = sorted(c for c in compared if case_matches(c, case))
        if not found:
            return None, f"--case {case}: no compared configuration matches"
        return found[0], "the named configuration"
    from imgbench.answer import answers

    try:
        picked = [a.best for a in answers(baseline) if a.best is not None]
    except Exception as exc:  # the comparison stands without the pick
        return None, f"the answer's pick: none ({one_line(exc)})"
    if not picked:
        return None, ""
    best = picked[0]
    for candidate in (best.case_id, best.matrix_case_id):
        if candidate in compared:
            return candidate, "the answer's pick"
    return None, f"the answer's pick ({best.case_id})"


def compare_machines(
    baseline: pd.DataFrame, candidate: pd.DataFrame, case: str | None = None
) -> MachineComparison:
    """Pair the sides' configurations by their comparison key and set each ratio beside the
    reference's prediction of it."""
    ours, theirs = _configurations(baseline), _configurations(candidate)
    several = len({k[2] for k in ours} | {k[2] for k in theirs}) > 1
    rows, refused = [], {}
    for identity in sorted(set(ours) & set(theirs)):
        label = identity[1] + (f" @ {identity[2]}" if several else "")
        why = _differs(ours[identity], theirs[identity])
        if why is not None:
            refused[label] = why
            continue
        rows.append(_pair(identity, ours[identity], theirs[identity]))
    result = MachineComparison(
        rows=pd.DataFrame(rows, columns=COLUMNS),
        baseline=side_reference(_timed(baseline)),
        candidate=side_reference(_timed(candidate)),
        other_machines=len(
            set(baseline["machine_id"].dropna()) | set(candidate["machine_id"].dropna())
        )
        > 1,
        not_comparable=refused,
    )
    result.notes += _reference_notes(result, baseline, candidate)
    result.pick, result.pick_from = _pick(baseline, list(result.rows["case_id"]), case)
    return result


def _reference_notes(
    result: MachineComparison, baseline: pd.DataFrame, candidate: pd.DataFrame
) -> list[str]:
    """Why the reference predicts nothing, when it does not."""
    notes = []
    for name, side, frame in (
        ("baseline", result.baseline, baseline),
        ("candidate", result.candidate, candidate),
    ):
        if side is None:
            reasons = sorted(set(frame.get("reference_error", pd.Series()).dropna().astype(str)))
            why = f": {reasons[0]}" if reasons else " (rows older than the reference)"
            notes.append(f"no machine reference in the {name}{why}")
    ours, theirs = result.baseline, result.candidate
    if ours is not None and theirs is not None and ours.workload != theirs.workload:
        notes.append(
            f"the references ran different workloads ({ours.workload} vs {theirs.workload}): "
            "no prediction"
        )
    return notes
