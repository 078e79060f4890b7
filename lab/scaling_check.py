"""Fit at 1 core, predict 2: the check of "A bound for the cores you don't have"
(docs/loaders.md, ``imgbench.answer.scaling``) that a 2-core machine allows.

Two runs of the same commit and profile, one with every process of the run restricted to one core
(``taskset``: the affinity mask is inherited by the pytest sessions and the DataLoader's workers),
one on both cores; one at a time, on a quiet machine, from the repository root:

    taskset -c 0 .venv/bin/imgbench run --profile quick --no-envs -k loader --name one-core --results /tmp/scaling-one
    .venv/bin/imgbench run --profile quick --no-envs -k loader --name two-core --results /tmp/scaling-two
    .venv/bin/python lab/scaling_check.py /tmp/scaling-one /tmp/scaling-two

(``--profile default`` instead of ``quick`` checks more configurations with ``--all``, in more
time.) A cgroup quota of one CPU (``systemd-run --scope -p CPUQuota=100% ...``) is not the same
restriction: it lets both cores run at half time, so workers still overlap; taskset is the one
that leaves one core.

The 1-core run's rows record the machine's core count (``cpu_cores_logical`` is psutil's, which
ignores the affinity mask), so ``--fit-cores`` (default 1) tells the script what that run had.
For the 2-core run's answer (the pick and the common default), the script takes the 1-core run's
rows of the same configuration (``imgbench.answer.scaling.configuration_key``: every worker count),
builds their scaling model at ``--fit-cores`` (rows at N = 1 only: a bound, linear from one core),
and sets its figure at ``--cores`` (default 2) beside the 2-core run's figure at that many cores
(the fastest of its rows there, as the model takes a figure at N): predicted, measured, error
(predicted over measured, minus 1) and whether the measured figure is inside the stated
interval (a bound's: from the figure already measured at N cores or fewer to the bound's 95%
upper end). ``--all``: every configuration measured in both runs, after the two.

Exit status 1 when a checked figure (the pick's, the common default's; with ``--all``, any) is
outside its interval, 2 when the folders hold no answer.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from imgbench.answer import answers
from imgbench.answer.intervals import Interval
from imgbench.answer.rows import Configuration
from imgbench.answer.scaling import (
    Point,
    configuration_key,
    configuration_label,
    loader_rows,
    points,
    scaling_model,
)
from imgbench.results.store import load_results


@dataclass(frozen=True)
class Check:
    """One configuration: the fit-run's figure at ``cores`` against the measured one."""

    role: str
    name: str
    cores: int
    kind: str | None
    label: str
    predicted: Interval | None
    measured: Point | None

    @property
    def error(self) -> float | None:
        if self.predicted is None or self.measured is None:
            return None
        return self.predicted.value / self.measured.images_per_s - 1.0

    @property
    def inside(self) -> bool | None:
        if self.predicted is None or self.measured is None:
            return None
        return self.predicted.low <= self.measured.images_per_s <= self.predicted.high


def _by_key(rows: pd.DataFrame) -> dict[str, pd.DataFrame]:
    if rows.empty:
        return {}
    keys = [configuration_key(r) for r in rows.to_dict("records")]
    return {key: group for key, group in rows.groupby(pd.Series(keys, index=rows.index))}


def check_one(
    role: str, fit: pd.DataFrame, measured: pd.DataFrame, fit_cores: int | None, cores: int
) -> Check:
    """``fit``: the fit run's rows of one configuration; ``measured``: the other run's."""
    first = measured.iloc[0] if not measured.empty else fit.iloc[0]
    name = configuration_label(Configuration.of(first))
    model = scaling_model(fit, fit_cores) if not fit.empty else None
    found = next((p for p in points(measured)[0] if p.cores == cores), None)
    if model is None:
        return Check(role, name, cores, None, "no row in the fit run", None, found)
    return Check(role, name, cores, model.kind, model.label, model.at(cores), found)


def checks(
    fit_frame: pd.DataFrame,
    measured_frame: pd.DataFrame,
    fit_cores: int | None = 1,
    cores: int = 2,
    every: bool = False,
) -> list[Check]:
    """The measured run's pick and common default (and, with ``every``, each configuration in
    both runs), each predicted from the fit run's rows."""
    answer = next((a for a in answers(measured_frame) if a.best is not None), None)
    if answer is None:
        return []
    fit_groups = _by_key(loader_rows(fit_frame))
    measured_rows = loader_rows(measured_frame)
    measured_groups = _by_key(measured_rows)
    chosen: list[tuple[str, str]] = []
    default = answer.default_cores or answer.default_0
    for role, found in (("pick", answer.best), ("common default", default)):
        if found is None:
            continue
        case = found.matrix_case_id or found.case_id
        row = measured_rows[measured_rows["case_id"].astype(str) == case]
        if not row.empty:
            chosen.append((role, configuration_key(row.iloc[-1])))
    if every:
        named = {key for _, key in chosen}
        chosen += [("-", key) for key in measured_groups if key in fit_groups and key not in named]
    empty = measured_rows.iloc[:0]
    return [
        check_one(role, fit_groups.get(key, empty), measured_groups[key], fit_cores, cores)
        for role, key in chosen
    ]


def _figure(found: Interval | None) -> str:
    if found is None:
        return "-"
    return f"{found.value:,.0f} ({found.low:,.0f}-{found.high:,.0f})"


def report(found: list[Check]) -> str:
    """The table: predicted, measured, error, inside; then each model's label."""
    table = pd.DataFrame(
        {
            "role": [c.role for c in found],
            "configuration": [c.name for c in found],
            "kind": [c.kind or "-" for c in found],
            "predicted (95% interval)": [_figure(c.predicted) for c in found],
            "measured (95% interval)": [
                _figure(c.measured.interval) if c.measured else "not measured" for c in found
            ],
            "error": [f"{c.error:+.1%}" if c.error is not None else "-" for c in found],
            "inside": ["-" if c.inside is None else ("yes" if c.inside else "NO") for c in found],
        }
    )
    lines = [table.to_string(index=False), ""]
    lines += [f"{c.role} · {c.name}: {c.label}" for c in found if c.role != "-"]
    errors = [abs(c.error) for c in found if c.error is not None]
    if errors:
        inside = sum(1 for c in found if c.inside)
        lines.append(
            f"{len(errors)} configuration(s): median |error| {pd.Series(errors).median():.1%}, "
            f"{inside} inside their interval"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("fit", type=Path, help="results of the restricted run (1 core)")
    parser.add_argument("measured", type=Path, help="results of the run to predict (2 cores)")
    parser.add_argument(
        "--fit-cores", type=int, default=1, help="cores the restricted run had (default 1)"
    )
    parser.add_argument("--cores", type=int, default=2, help="cores to predict (default 2)")
    parser.add_argument("--all", action="store_true", help="also every configuration in both runs")
    args = parser.parse_args(argv)
    found = checks(
        load_results(args.fit).frame,
        load_results(args.measured).frame,
        args.fit_cores,
        args.cores,
        args.all,
    )
    if not found:
        print(f"no loader answer in {args.measured}", file=sys.stderr)
        return 2
    print(
        f"fitted on {args.fit} at {args.fit_cores} core(s), predicted at {args.cores} cores, "
        f"measured in {args.measured}"
    )
    print(report(found))
    return 0 if all(c.inside is not False for c in found) else 1


if __name__ == "__main__":
    sys.exit(main())
