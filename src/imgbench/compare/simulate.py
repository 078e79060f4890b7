"""Error rates of the regression check, simulated from real recorded runs of the same code.

Given several runs of one suite recorded one after another (many rounds each), a trial builds a
baseline and a candidate the way a CI job would measure them and runs the real decision code:

- ``interleaved`` (what ``imgbench ci`` does): 2 x repeats consecutive runs, alternately
  assigned to baseline and candidate, ``rounds / repeats`` rounds drawn from each;
- ``runs``: ``repeats`` runs per side drawn at random, without overlap, from all the recorded
  runs (interleaving's aim: both sides sample the same spread of process states), ``rounds /
  repeats`` rounds from each; many more distinct A/A pairs than consecutive windows give;
- ``separate``: two different runs, ``rounds`` rounds each (two jobs at different times);
- ``split``: one run's rounds dealt alternately to the two sides (round-level interleaving).

A/A: the candidate is the same code, so any regression is a false alarm (counted per suite:
one trial = one whole comparison). A/B: one random case's candidate round times are multiplied
by 1 + slowdown; power = how often that case is flagged.

    python -m imgbench.compare.simulate tests/compare/data/aa_runs.parquet --rounds 30
"""

from __future__ import annotations

import argparse
import json
import math
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd

from imgbench.compare.config import RegressionConfig, load_config
from imgbench.compare.stats import REGRESSED, SideCase, compare_cases, side_cases
from imgbench.results.store import load_results

SCHEMES = ("interleaved", "runs", "separate", "split")
# images/s stands for its twins (MB/s, MP/s: the same round times scaled); latency is advisory
SIM_METRICS = ("images_per_s_median", "peak_rss_bytes")


@dataclass
class ErrorRates:
    scheme: str
    rounds: int
    repeats: int
    trials: int
    false_alarm_rate: float  # share of A/A suite comparisons that flagged anything
    power: dict[float, float]  # slowdown -> share of A/B trials that flagged the slowed case
    cases: int
    runs: int

    def as_dict(self) -> dict:
        return {
            "scheme": self.scheme,
            "rounds": self.rounds,
            "repeats": self.repeats,
            "trials": self.trials,
            "cases": self.cases,
            "runs": self.runs,
            "false_alarm_rate": self.false_alarm_rate,
            "power": {f"{k:.0%}": v for k, v in self.power.items()},
        }


def robust_cv(samples: np.ndarray) -> float:
    """IQR / 1.349 / median: the spread of round times, insensitive to a few outliers."""
    q1, q2, q3 = np.percentile(samples, [25, 50, 75])
    return float((q3 - q1) / 1.349 / q2)


def calm_runs(frame: pd.DataFrame, max_cv: float) -> pd.DataFrame:
    """Only the runs whose every case had a robust CV of round times at most ``max_cv``."""
    ok = frame[frame["status"] == "ok"]
    worst = ok.groupby("run_id")["samples_s"].agg(
        lambda col: max(robust_cv(np.asarray(s)) for s in col)
    )
    return frame[frame["run_id"].isin(worst[worst <= max_cv].index)]


def recorded_runs(frame: pd.DataFrame) -> list[dict[str, SideCase]]:
    """Each run as {case_id: SideCase}, in the order they were recorded; only common cases."""
    order = frame.groupby("run_id")["created_utc"].min().sort_values().index
    runs = [side_cases(frame[frame["run_id"] == r], SIM_METRICS) for r in order]
    common = set.intersection(*(set(r) for r in runs)) if runs else set()
    common = {c for c in common if all("images_per_s_median" in r[c].per_round for r in runs)}
    return [{c: run[c] for c in sorted(common)} for run in runs]


def _draw(
    case: SideCase, rounds: int, rng: np.random.Generator, pick: np.ndarray | None = None
) -> SideCase:
    values = case.per_round["images_per_s_median"]
    if pick is None:
        pick = rng.choice(len(values), size=min(rounds, len(values)), replace=False)
    drawn = values[pick]
    return SideCase(
        case.case_id,
        case.stage,
        {"images_per_s_median": drawn},
        dict(case.values),
        1,
        {"images_per_s_median": np.array([np.median(drawn)])},
    )


def _merge(parts: list[SideCase]) -> SideCase:
    first = parts[0]
    per_round = {
        "images_per_s_median": np.concatenate([p.per_round["images_per_s_median"] for p in parts])
    }
    values = {
        m: float(np.median([p.values[m] for p in parts if m in p.values])) for m in first.values
    }
    per_run = {
        "images_per_s_median": np.concatenate([p.per_run["images_per_s_median"] for p in parts])
    }
    return SideCase(first.case_id, first.stage, per_round, values, len(parts), per_run)


def _sides(
    runs: list[dict[str, SideCase]],
    scheme: str,
    rounds: int,
    repeats: int,
    rng: np.random.Generator,
) -> tuple[dict[str, SideCase], dict[str, SideCase]]:
    cases = list(runs[0])
    if scheme == "split":
        run = runs[rng.integers(len(runs))]
        base, cand = {}, {}
        for c in cases:
            n = len(run[c].per_round["images_per_s_median"])
            start = rng.integers(2)
            idx_b, idx_c = np.arange(start, n, 2), np.arange(1 - start, n, 2)
            base[c] = _draw(
                run[c], rounds, rng, rng.choice(idx_b, min(rounds, len(idx_b)), replace=False)
            )
            cand[c] = _draw(
                run[c], rounds, rng, rng.choice(idx_c, min(rounds, len(idx_c)), replace=False)
            )
        return base, cand
    if scheme == "separate":
        i, j = rng.choice(len(runs), size=2, replace=False)
        return (
            {c: _draw(runs[i][c], rounds, rng) for c in cases},
            {c: _draw(runs[j][c], rounds, rng) for c in cases},
        )
    if scheme == "runs":
        chosen = rng.choice(len(runs), size=2 * repeats, replace=False)
        window = [runs[k] for k in chosen]
        flip = 0
    else:
        start = rng.integers(len(runs) - 2 * repeats + 1)
        window = runs[start : start + 2 * repeats]
        flip = int(rng.integers(2))
    per_run = math.ceil(rounds / repeats)
    base_runs = [r for k, r in enumerate(window) if k % 2 == flip]
    cand_runs = [r for k, r in enumerate(window) if k % 2 != flip]
    return (
        {c: _merge([_draw(r[c], per_run, rng) for r in base_runs]) for c in cases},
        {c: _merge([_draw(r[c], per_run, rng) for r in cand_runs]) for c in cases},
    )


def _slowed(case: SideCase, slowdown: float) -> SideCase:
    metric = "images_per_s_median"
    per_round = {metric: case.per_round[metric] / (1 + slowdown)}
    per_run = {metric: case.per_run[metric] / (1 + slowdown)}
    return SideCase(case.case_id, case.stage, per_round, dict(case.values), case.runs, per_run)


def error_rates(
    frame: pd.DataFrame,
    rounds: int,
    *,
    scheme: str = "interleaved",
    repeats: int = 3,
    slowdowns: tuple[float, ...] = (0.05, 0.10, 0.20),
    trials: int = 400,
    config: RegressionConfig | None = None,
    seed: int = 0,
) -> ErrorRates:
    """A/A false-alarm rate per suite and A/B power per slowdown, from real recorded runs."""
    if scheme not in SCHEMES:
        raise ValueError(f"scheme must be one of {SCHEMES}")
    config = replace(config or RegressionConfig(), metrics=SIM_METRICS, resamples=500)
    runs = recorded_runs(frame)
    needed = 2 * repeats if scheme in ("interleaved", "runs") else 2 if scheme == "separate" else 1
    if len(runs) < needed:
        raise ValueError(f"{scheme} with {repeats} repeats needs {needed} runs, got {len(runs)}")
    cases = list(runs[0])
    rng = np.random.default_rng(seed)
    alarms = 0
    hits = dict.fromkeys(slowdowns, 0)
    for _ in range(trials):
        base, cand = _sides(runs, scheme, rounds, repeats, rng)
        rows = compare_cases(base, cand, cases, config, ci_for_all=False)
        alarms += bool(((rows["verdict"] == REGRESSED) & rows["gating"]).any())
        victim = cases[rng.integers(len(cases))]
        for slowdown in slowdowns:
            slowed = dict(cand)
            slowed[victim] = _slowed(cand[victim], slowdown)
            rows = compare_cases(base, slowed, cases, config, ci_for_all=False)
            flagged = rows[(rows["case_id"] == victim) & (rows["metric"] == "images_per_s_median")]
            hits[slowdown] += bool((flagged["verdict"] == REGRESSED).any())
    return ErrorRates(
        scheme=scheme,
        rounds=rounds,
        repeats=repeats if scheme in ("interleaved", "runs") else 1,
        trials=trials,
        false_alarm_rate=alarms / trials,
        power={s: hits[s] / trials for s in slowdowns},
        cases=len(cases),
        runs=len(runs),
    )


def main(argv: list[str] | None = None) -> None:  # pragma: no cover - a reproduction command
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", type=Path, help="parquet file or folder with repeated runs")
    parser.add_argument("--rounds", type=int, nargs="+", default=[5, 10, 20, 30])
    parser.add_argument("--scheme", choices=SCHEMES, nargs="+", default=["interleaved"])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--trials", type=int, default=400)
    parser.add_argument("--decide-on", choices=("ci", "median"), default=None)
    parser.add_argument("--alpha", type=float, default=None)
    parser.add_argument("--max-cv", type=float, default=None, help="keep only calm runs")
    parser.add_argument(
        "--min-runs", type=int, default=None, help="runs per side for the run-level test"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--slowdowns", type=float, nargs="+", default=[0.05, 0.10, 0.20], help="A/B slowdowns"
    )
    args = parser.parse_args(argv)
    frame = load_results(args.runs).frame
    if args.max_cv is not None:
        frame = calm_runs(frame, args.max_cv)
    config = load_config()
    config = config.with_overrides(decide_on=args.decide_on, alpha=args.alpha)
    if args.min_runs is not None:
        config = replace(config, min_runs=args.min_runs)
    for scheme in args.scheme:
        for rounds in args.rounds:
            rates = error_rates(
                frame,
                rounds,
                scheme=scheme,
                repeats=args.repeats,
                trials=args.trials,
                config=config,
                seed=args.seed,
                slowdowns=tuple(args.slowdowns),
            )
            print(json.dumps(rates.as_dict()), flush=True)


if __name__ == "__main__":  # pragma: no cover
    main()
