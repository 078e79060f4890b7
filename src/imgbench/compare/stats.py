"""Is the candidate worse than the baseline? Ratio of medians, bootstrap CI, Mann-Whitney, Holm/BH.

A case regresses on a metric only when both hold:

1. significance: a one-sided Mann-Whitney U test on the raw per-round values says the candidate
   is worse, with p-values corrected across the cases compared (Holm, or Benjamini-Hochberg);
2. practical size: the cost (round time, latency, memory) grew by more than the case's
   threshold. With ``decide_on = "ci"`` (default) the worse end of the bootstrap CI must reach
   the threshold, so a true slowdown of exactly the threshold is caught (the point estimate would
   catch it half the time); with ``"median"`` the ratio of medians itself must.

Throughput metrics have one raw value per timed round (work per round / round seconds). When
both sides hold at least ``min_runs`` runs (``imgbench ci --repeats``), the test, the ratio and
the CI are on the runs' medians instead (and metrics stored once per run are tested on those
values): on a shared machine a whole process, or the moment it
ran, shifts every round of a case by more than a regression threshold, so rounds pooled over runs
are not independent and a test on them raises false alarms; the runs are. Metrics
stored as one value per case (latency quantiles, peak RSS) have nothing to test: they are judged
by the threshold alone, and the report says so. Metrics listed as advisory in the config are
reported but never fail the check.
"""

from __future__ import annotations

import itertools
import math
import zlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from imgbench.compare.config import RegressionConfig
from imgbench.compare.machines import MachineComparison, compare_machines
from imgbench.compare.power import run_level_power
from imgbench.results.schema import HIGHER_IS_BETTER

# Throughput metrics and the per-round work (column, scale) that turns round seconds into them.
PER_ROUND_WORK: dict[str, tuple[str, float]] = {
    "images_per_s_median": ("images_per_round", 1.0),
    "mb_per_s_median": ("bytes_per_round", 1e-6),
    "megapixels_per_s_median": ("megapixels_per_round", 1.0),
}
MIN_SAMPLES = 3  # fewer raw rounds than this per side: threshold only
PERMUTATION_BELOW = 0.05  # a run-level t p-value under this is recomputed by permutation
PERMUTATION_EXACT = (
    20_000  # every split of the runs when there are at most this many (8 vs 8: 12,870)
)
PERMUTATION_DRAWS = 20_000  # else this many random splits

REGRESSED, IMPROVED, UNCHANGED = "regressed", "improved", "unchanged"
METHOD_TEST = "mann-whitney"  # on the rounds of one run per side (or of too few runs)
METHOD_RUNS = "run medians: permutation / welch t on logs"
METHOD_THRESHOLD = "threshold only (one value per run, no raw samples)"
METHOD_COUNT = "deterministic count: threshold on the runs' median"
# metrics that do not scatter (instructions under callgrind repeat within 0.005%): no test, the
# threshold alone decides, whatever the number of runs
DETERMINISTIC = frozenset({"instructions_per_image"})


class CompareInputError(ValueError):
    """The two sides cannot be compared (exit code 2)."""


@dataclass
class SideCase:
    """One case on one side, merged over every run of that side (interleaved runs add rounds)."""

    case_id: str
    stage: str | None
    per_round: dict[str, np.ndarray]  # metric -> raw per-round values
    values: dict[str, float]  # metric -> median over the side's runs of the recorded value
    runs: int
    per_run: dict[str, np.ndarray] = field(default_factory=dict)  # metric -> each run's median


@dataclass
class ComparisonResult:
    """Everything the reports need: one row per (case, metric), and what was left out."""

    rows: pd.DataFrame
    config: RegressionConfig
    baseline: dict[str, Any]
    candidate: dict[str, Any]
    warnings: list[str] = field(default_factory=list)
    only_in_baseline: list[str] = field(default_factory=list)
    only_in_candidate: list[str] = field(default_factory=list)
    ignored: dict[str, str] = field(default_factory=dict)  # case_id -> reason
    # the two sides' machines: per configuration, their ratio and the reference's prediction
    machines: MachineComparison | None = None

    @property
    def regressed(self) -> pd.DataFrame:
        """Regressions that fail the check (advisory metrics excluded)."""
        return self.rows[(self.rows["verdict"] == REGRESSED) & self.rows["gating"].astype(bool)]

    @property
    def advisory_regressions(self) -> pd.DataFrame:
        return self.rows[(self.rows["verdict"] == REGRESSED) & ~self.rows["gating"].astype(bool)]

    @property
    def regressed_cases(self) -> list[str]:
        return sorted(set(self.regressed["case_id"]))

    @property
    def exit_code(self) -> int:
        return 1 if len(self.regressed) else 0

    def geomean(self) -> pd.DataFrame:
        """Per metric: the geometric mean of candidate/baseline ratios over the cases compared."""
        if self.rows.empty:
            return pd.DataFrame(columns=["metric", "cases", "geomean_ratio"])
        valid = self.rows[self.rows["ratio"] > 0]
        out = valid.groupby("metric", sort=False)["ratio"].agg(
            cases="count", geomean_ratio=lambda r: float(np.exp(np.mean(np.log(r))))
        )
        return out.reset_index()


def holm(pvalues: np.ndarray) -> np.ndarray:
    """Holm-Bonferroni adjusted p-values (controls the family-wise error rate)."""
    p = np.asarray(pvalues, dtype=float)
    m = len(p)
    if m == 0:
        return p
    order = np.argsort(p)
    adjusted = np.maximum.accumulate(p[order] * (m - np.arange(m)))
    out = np.empty(m)
    out[order] = np.minimum(adjusted, 1.0)
    return out


def adjust(pvalues: np.ndarray, method: str) -> np.ndarray:
    if len(pvalues) == 0:
        return np.asarray(pvalues, dtype=float)
    if method == "bh":
        from scipy import stats  # 0.4 s to import: only a comparison pays for it

        return stats.false_discovery_control(np.asarray(pvalues, dtype=float), method="bh")
    return holm(pvalues)


def _ratio_of_medians(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.median(y, axis=axis) / np.median(x, axis=axis)


def bootstrap_ratio_ci(
    baseline: np.ndarray, candidate: np.ndarray, config: RegressionConfig, key: str = ""
) -> tuple[float, float]:
    """Percentile bootstrap CI of median(candidate) / median(baseline), seeded per case."""
    if np.all(baseline == baseline[0]) and np.all(candidate == candidate[0]):
        ratio = float(candidate[0] / baseline[0])
        return ratio, ratio
    from scipy import stats

    rng = np.random.default_rng([config.seed, zlib.crc32(key.encode())])
    result = stats.bootstrap(
        (baseline, candidate),
        _ratio_of_medians,
        vectorized=True,
        n_resamples=config.resamples,
        confidence_level=config.confidence,
        method="percentile",
        rng=rng,
    )
    low, high = result.confidence_interval
    return float(low), float(high)


@dataclass(frozen=True)
class RunLevelTest:
    """The run-level comparison of one case and metric (log scale, candidate vs baseline)."""

    ratio: float  # geometric mean ratio of the run medians
    ci_low: float
    ci_high: float
    p: dict[str, float]  # one-sided p-value per alternative: "less" / "greater" (candidate is)


def run_level_test(
    baseline: np.ndarray, candidate: np.ndarray, confidence: float, seed: int = 0
) -> RunLevelTest:
    """Run-level test on the log of each run's median, both directions at once.

    A run's median is one draw of "how fast was this process at that moment". The ratio is the
    geometric mean ratio and the CI Welch's t interval. A p-value is Welch's t, except where it
    is small (< ``PERMUTATION_BELOW``): there a permutation test of the difference of mean logs
    replaces it (exact over every split up to ``PERMUTATION_EXACT`` of them), because run medians
    on a shared machine are often bimodal and the t-test then claims too much; a permutation
    test assumes only that runs of the same code are exchangeable.
    """
    lb, lc = np.log(baseline), np.log(candidate)
    ratio = float(np.exp(lc.mean() - lb.mean()))
    if np.ptp(lb) == 0 and np.ptp(lc) == 0:  # no spread: the sign of the shift decides
        return RunLevelTest(
            ratio, ratio, ratio, {"less": float(ratio >= 1), "greater": float(ratio <= 1)}
        )
    from scipy import stats

    result = stats.ttest_ind(lc, lb, equal_var=False)
    ci = result.confidence_interval(confidence)
    t_dist = stats.t(result.df)
    p = {"less": float(t_dist.cdf(result.statistic)), "greater": float(t_dist.sf(result.statistic))}
    if min(p.values()) < PERMUTATION_BELOW:
        permuted = permutation_p(lb, lc, seed)
        p = {k: permuted[k] if v < PERMUTATION_BELOW else v for k, v in p.items()}
    return RunLevelTest(ratio, float(np.exp(ci.low)), float(np.exp(ci.high)), p)


def permutation_p(lb: np.ndarray, lc: np.ndarray, seed: int) -> dict[str, float]:
    """One-sided permutation p-values of mean(lc) - mean(lb): "less" (candidate lower) and
    "greater", from the same splits of the pooled runs."""
    pooled = np.concatenate([lb, lc])
    n, k = len(pooled), len(lc)
    observed = lc.mean() - lb.mean()
    exact = math.comb(n, k) <= PERMUTATION_EXACT
    if exact:
        picks = np.array(list(itertools.combinations(range(n), k)))
    else:
        rng = np.random.default_rng(seed)
        picks = np.argsort(rng.random((PERMUTATION_DRAWS, n)), axis=1)[:, :k]
    cand_sum = pooled[picks].sum(axis=1)
    diffs = cand_sum / k - (pooled.sum() - cand_sum) / (n - k)
    tol = 1e-12 * max(1.0, abs(observed))
    hits = {
        "less": int(np.sum(diffs <= observed + tol)),
        "greater": int(np.sum(diffs >= observed - tol)),
    }
    if exact:
        return {side: count / len(diffs) for side, count in hits.items()}
    return {side: (count + 1) / (len(diffs) + 1) for side, count in hits.items()}


EXACT_UP_TO = 50  # rounds per side up to which the U statistic's exact distribution is used


def one_sided_p(baseline: np.ndarray, candidate: np.ndarray, candidate_worse_if: str) -> float:
    """Mann-Whitney U p-value for 'candidate is lower' (``less``) or 'higher' (``greater``).

    Exact where it can be (no ties, up to ``EXACT_UP_TO`` rounds a side): scipy's default for 10
    vs 10 rounds is the normal approximation, whose floor (9e-5 at complete separation) Holm over
    450 cases lifts past alpha = 0.01, so a clear 15% slowdown was reported unchanged; the exact
    floor is 1 / C(20, 10) = 5.4e-6.
    """
    if np.array_equal(np.sort(baseline), np.sort(candidate)):
        return 1.0
    tied = len(np.unique(np.concatenate([baseline, candidate]))) < len(baseline) + len(candidate)
    exact = not tied and max(len(baseline), len(candidate)) <= EXACT_UP_TO
    from scipy import stats

    return float(
        stats.mannwhitneyu(
            candidate,
            baseline,
            alternative=candidate_worse_if,
            method="exact" if exact else "asymptotic",
        ).pvalue
    )


# -- reading a side -----------------------------------------------------------------------


def _per_round(row: Any, metric: str) -> np.ndarray | None:
    if metric not in PER_ROUND_WORK:
        return None
    samples = row.samples_s
    if samples is None or len(samples) == 0:
        return None
    column, scale = PER_ROUND_WORK[metric]
    work = getattr(row, column)
    if work is None or pd.isna(work) or work <= 0:
        return None
    seconds = np.asarray(samples, dtype=float)
    seconds = seconds[seconds > 0]
    return float(work) * scale / seconds


def side_cases(frame: pd.DataFrame, metrics: tuple[str, ...]) -> dict[str, SideCase]:
    """The ok rows of one side, one SideCase per case id (rounds of repeated runs concatenated)."""
    ok = frame[frame["status"] == "ok"]
    # the columns the rounds are read from, tupled once per case: a tuple of every schema column
    # per case and metric was most of a 451-case compare (cProfile: 89 s of 101, pandas indexing)
    wanted = ("samples_s", *(column for column, _ in PER_ROUND_WORK.values()))
    columns = [c for c in wanted if c in ok.columns]
    cases: dict[str, SideCase] = {}
    for case_id, rows in ok.groupby("case_id", sort=True):
        per_round: dict[str, np.ndarray] = {}
        per_run: dict[str, np.ndarray] = {}
        values: dict[str, float] = {}
        records = list(rows[columns].itertuples(index=False))
        for metric in metrics:
            chunks = [v for row in records if (v := _per_round(row, metric)) is not None]
            chunks = [c for c in chunks if len(c)]
            if chunks:
                per_round[metric] = np.concatenate(chunks)
                per_run[metric] = np.array([np.median(c) for c in chunks])
            recorded = pd.to_numeric(rows[metric], errors="coerce").dropna()
            recorded = recorded[recorded > 0]
            if len(recorded):
                values[metric] = float(recorded.median())
                if metric not in per_run and metric not in DETERMINISTIC:
                    # one value per run (latency, memory): the runs are the samples
                    per_run[metric] = recorded.to_numpy(dtype=float)
        stage = rows["stage"].dropna()
        cases[str(case_id)] = SideCase(
            case_id=str(case_id),
            stage=str(stage.iloc[0]) if len(stage) else None,
            per_round=per_round,
            values=values,
            runs=rows["run_id"].nunique(),
            per_run=per_run,
        )
    return cases


def describe_side(frame: pd.DataFrame) -> dict[str, Any]:
    """Who measured a side: runs, commits, machines, datasets (for the report header)."""

    def distinct(column: str) -> list[str]:
        if column not in frame:  # e.g. a pytest-benchmark JSON import has no such column
            return []
        return sorted({str(v) for v in frame[column].dropna().unique()})

    return {
        "runs": distinct("run_id"),
        "git_commit": distinct("git_commit"),
        "git_dirty": bool(frame["git_dirty"].fillna(False).astype(bool).any()),
        "machine_id": distinct("machine_id"),
        "hostname": distinct("hostname"),
        "dataset_name": distinct("dataset_name"),
        "dataset_fingerprint": distinct("dataset_fingerprint"),
        "address_layout": distinct("address_layout"),
        "ok_cases": int((frame["status"] == "ok").sum()),
    }


def _check_sides(
    base: dict[str, Any], cand: dict[str, Any], allow_cross_machine: bool
) -> list[str]:
    warnings: list[str] = []
    for name, side in (("baseline", base), ("candidate", cand)):
        if len(side["dataset_fingerprint"]) > 1:
            raise CompareInputError(
                f"the {name} mixes datasets (fingerprints {', '.join(side['dataset_fingerprint'])})"
            )
    fb, fc = base["dataset_fingerprint"], cand["dataset_fingerprint"]
    if fb and fc and fb != fc:
        raise CompareInputError(
            f"different datasets: baseline {base['dataset_name']} ({fb[0]}) vs "
            f"candidate {cand['dataset_name']} ({fc[0]}); compare runs on the same data"
        )
    machines = set(base["machine_id"]) | set(cand["machine_id"])
    if len(machines) > 1:
        hosts = f"baseline {base['hostname']} vs candidate {cand['hostname']}"
        if not allow_cross_machine:
            raise CompareInputError(
                f"different machines ({hosts}); timings from two machines are not comparable. "
                "Pass --allow-cross-machine to compare anyway"
            )
        warnings.append(
            f"cross-machine comparison ({hosts}): differences may come from the hardware, "
            "not the change"
        )
    lb, lc = base["address_layout"], cand["address_layout"]
    if lb and lc and lb != lc:  # one case moved 14% with the layout alone (docs/measuring.md)
        warnings.append(
            f"the sides ran under different address layouts (baseline {', '.join(lb)}, "
            f"candidate {', '.join(lc)}): the layout alone can move a case's wall time"
        )
    return warnings


def _pooling_warnings(
    baseline: pd.DataFrame, candidate: pd.DataFrame, case_ids: list[str]
) -> list[str]:
    """Cases whose sides pooled different numbers of worker processes. Each fork lands in a state
    its heap offset and context fix (Pillow's decode: alone and inside the suite agreed within
    1.5% with one fork, and differed by 23% with three), so the sides did not measure alike."""
    if "processes" not in baseline or "processes" not in candidate:
        return []

    def counts(frame: pd.DataFrame) -> pd.Series:
        ok = frame[(frame["status"] == "ok") & frame["case_id"].isin(case_ids)]
        return ok.groupby("case_id")["processes"].agg(lambda v: tuple(sorted(set(v.dropna()))))

    base, cand = counts(baseline), counts(candidate)
    differ = [c for c in base.index.intersection(cand.index) if base[c] != cand[c]]
    if not differ:
        return []
    pairs = sorted({(base[c], cand[c]) for c in differ})
    said = "; ".join(
        f"baseline {'/'.join(str(int(n)) for n in b)} vs candidate {'/'.join(str(int(n)) for n in c)}"
        for b, c in pairs
    )
    return [
        f"{len(differ)} case(s) were measured in different numbers of worker processes ({said}): "
        "a figure moves with the forks it pools (docs/measuring.md)"
    ]


def _version_warnings(
    baseline: pd.DataFrame, candidate: pd.DataFrame, case_ids: list[str]
) -> list[str]:
    """Cases whose library version differs between the sides: still judged (a version bump is a
    change a gate must see), and said, since the code measured is not the same library's."""

    def versions(frame: pd.DataFrame) -> pd.Series:
        ok = frame[(frame["status"] == "ok") & frame["case_id"].isin(case_ids)]
        return ok.groupby("case_id")["library_version"].agg(
            lambda v: ", ".join(sorted({str(x) for x in v.dropna()}))
        )

    base, cand = versions(baseline), versions(candidate)
    differ = [c for c in base.index.intersection(cand.index) if base[c] != cand[c]]
    if not differ:
        return []
    shown = "; ".join(f"{c} ({base[c] or '?'} vs {cand[c] or '?'})" for c in differ[:3])
    more = f"; and {len(differ) - 3} more" if len(differ) > 3 else ""
    return [
        f"{len(differ)} case(s) ran another library version on each side: {shown}{more}; judged "
        "here, left out of the machine comparison"
    ]


# -- judging ------------------------------------------------------------------------------


def _verdict_tested(
    cost: float,
    cost_worse_end: float,
    p_worse: float,
    p_better: float,
    threshold: float,
    config: RegressionConfig,
) -> str:
    worse_size = cost_worse_end if config.decide_on == "ci" else cost
    if p_worse < config.alpha and worse_size > 1 + threshold:
        return REGRESSED
    # an improvement is claimed on the estimate itself: a gate may over-warn, a claim should not
    if p_better < config.alpha and cost < 1 / (1 + threshold):
        return IMPROVED
    return UNCHANGED


def _verdict_threshold(cost: float, threshold: float) -> str:
    if cost > 1 + threshold:
        return REGRESSED
    if cost < 1 / (1 + threshold):
        return IMPROVED
    return UNCHANGED


def _metric_row(
    b: SideCase, c: SideCase, case_id: str, metric: str, config: RegressionConfig
) -> dict[str, Any] | None:
    """One case's row for one metric, before correction: tested across runs (enough runs on
    each side), across rounds (enough rounds), or against the threshold alone; None when a side
    lacks the metric."""
    higher = HIGHER_IS_BETTER[metric]
    worse_if = "less" if higher else "greater"
    better_if = "greater" if higher else "less"
    stage = b.stage or c.stage
    row: dict[str, Any] = {
        "case_id": case_id,
        "stage": stage,
        "metric": metric,
        "higher_is_better": higher,
        "gating": config.gates(metric),
        "threshold": config.threshold_for(case_id, stage, metric),
    }
    xb, xc = b.per_round.get(metric), c.per_round.get(metric)
    rb, rc = b.per_run.get(metric), c.per_run.get(metric)
    if rb is not None and rc is not None and min(len(rb), len(rc)) >= config.min_runs:
        seed = zlib.crc32(f"{case_id}|{metric}".encode()) + config.seed
        test = run_level_test(rb, rc, config.confidence, seed)
        row.update(
            method=METHOD_RUNS,
            n_baseline=len(rb),
            n_candidate=len(rc),
            baseline=float(np.exp(np.log(rb).mean())),
            candidate=float(np.exp(np.log(rc).mean())),
            p_worse=test.p[worse_if],
            p_better=test.p[better_if],
            _ci=(test.ci_low, test.ci_high),
            _logs=(np.log(rb), np.log(rc)),
        )
    elif xb is not None and xc is not None and min(len(xb), len(xc)) >= MIN_SAMPLES:
        row.update(
            method=METHOD_TEST,
            n_baseline=len(xb),
            n_candidate=len(xc),
            baseline=float(np.median(xb)),
            candidate=float(np.median(xc)),
            p_worse=one_sided_p(xb, xc, worse_if),
            p_better=one_sided_p(xb, xc, better_if),
            _samples=(xb, xc),
        )
    elif metric in b.values and metric in c.values:
        row.update(
            method=METHOD_COUNT if metric in DETERMINISTIC else METHOD_THRESHOLD,
            n_baseline=b.runs,
            n_candidate=c.runs,
            baseline=b.values[metric],
            candidate=c.values[metric],
        )
    else:
        return None
    row["ratio"] = row["candidate"] / row["baseline"]
    row["cost"] = 1 / row["ratio"] if higher else row["ratio"]
    return row


def _adjust_tested(tested: list[dict[str, Any]], config: RegressionConfig) -> None:
    """One metric's tested rows: p-values corrected for their number, and each run-level row's
    power to catch its threshold."""
    p_worse = adjust(np.array([r["p_worse"] for r in tested]), config.correction)
    p_better = adjust(np.array([r["p_better"] for r in tested]), config.correction)
    for row, pw, pb in zip(tested, p_worse, p_better, strict=True):
        row["p_worse_adjusted"], row["p_better_adjusted"] = float(pw), float(pb)
    # Holm's (and BH's) first step tests the smallest p at alpha / m: the level a single
    # regressed case among m must reach
    level = config.alpha / len(tested)
    for row in tested:
        logs: tuple[np.ndarray, np.ndarray] | None = row.pop("_logs", None)
        if logs is not None:
            row["power"] = run_level_power(logs[0], logs[1], row["threshold"], level)


def _decide(row: dict[str, Any], config: RegressionConfig, ci_for_all: bool) -> None:
    """The row's interval and verdict (and whether it gates, by its power)."""
    row.setdefault("power", math.nan)
    if config.min_power is not None and row["metric"] not in DETERMINISTIC:
        # a wall-time verdict blocks only where it could have caught the threshold
        row["gating"] = bool(row["gating"] and row["power"] >= config.min_power)
    higher, threshold = row["higher_is_better"], row["threshold"]
    samples: tuple[np.ndarray, np.ndarray] | None = row.pop("_samples", None)
    run_ci: tuple[float, float] | None = row.pop("_ci", None)
    if samples is None and run_ci is None:
        row["ci_low"] = row["ci_high"] = math.nan
        row["verdict"] = _verdict_threshold(row["cost"], threshold)
        return
    need_ci = ci_for_all or (row["p_worse_adjusted"] < config.alpha and config.decide_on == "ci")
    if run_ci is not None:
        low, high = run_ci
    elif need_ci and samples is not None:  # a tested row has _ci or _samples
        low, high = bootstrap_ratio_ci(*samples, config, key=f"{row['case_id']}|{row['metric']}")
    else:
        low = high = row["ratio"]
    row["ci_low"], row["ci_high"] = low, high
    cost_worse_end = 1 / low if higher else high
    row["verdict"] = _verdict_tested(
        row["cost"],
        cost_worse_end,
        row["p_worse_adjusted"],
        row["p_better_adjusted"],
        threshold,
        config,
    )


def compare_cases(
    base: dict[str, SideCase],
    cand: dict[str, SideCase],
    case_ids: list[str],
    config: RegressionConfig,
    ci_for_all: bool = True,
) -> pd.DataFrame:
    """One row per (case, metric) with ratio, CI, p-values and verdict.

    ``ci_for_all=False`` bootstraps only where the verdict needs it (error-rate simulations).
    """
    rows: list[dict[str, Any]] = []
    for metric in config.metrics:
        tested: list[dict[str, Any]] = []
        for case_id in case_ids:
            row = _metric_row(base[case_id], cand[case_id], case_id, metric, config)
            if row is None:
                continue
            if row["method"] in (METHOD_RUNS, METHOD_TEST):
                tested.append(row)
            rows.append(row)
        if tested:
            _adjust_tested(tested, config)
    for row in rows:
        _decide(row, config, ci_for_all)
    columns = [
        "case_id",
        "stage",
        "metric",
        "higher_is_better",
        "gating",
        "method",
        "n_baseline",
        "n_candidate",
        "baseline",
        "candidate",
        "ratio",
        "ci_low",
        "ci_high",
        "cost",
        "threshold",
        "p_worse",
        "p_worse_adjusted",
        "p_better",
        "p_better_adjusted",
        "power",
        "verdict",
    ]
    return pd.DataFrame(rows, columns=columns)


def compare_frames(
    baseline: pd.DataFrame,
    candidate: pd.DataFrame,
    config: RegressionConfig | None = None,
    *,
    allow_cross_machine: bool = False,
    case: str | None = None,
) -> ComparisonResult:
    """Compare two sets of result rows (each: one run, or several runs of the same code merged).

    Raises CompareInputError when the sides cannot be compared: no common ok cases, different
    dataset fingerprints, or different machines without ``allow_cross_machine``. ``case`` names
    the configuration the machine comparison sums up (default: the baseline's answer's pick).
    """
    config = config or RegressionConfig()
    base_info, cand_info = describe_side(baseline), describe_side(candidate)
    warnings = _check_sides(base_info, cand_info, allow_cross_machine)
    base = side_cases(baseline, config.metrics)
    cand = side_cases(candidate, config.metrics)
    common = sorted(set(base) & set(cand))
    if not common:
        raise CompareInputError(
            f"no common cases with status ok (baseline has {len(base)}, candidate {len(cand)})"
        )
    ignored = {c: r for c in common if (r := config.ignored(c, base[c].stage)) is not None}
    compared = [c for c in common if c not in ignored]
    warnings += _pooling_warnings(baseline, candidate, compared)
    warnings += _version_warnings(baseline, candidate, compared)
    rows = compare_cases(base, cand, compared, config)
    if any(rows["method"] == METHOD_THRESHOLD) if len(rows) else False:
        names = sorted(set(rows.loc[rows["method"] == METHOD_THRESHOLD, "metric"]))
        warnings.append(
            f"{', '.join(names)}: one value per run, no raw samples; judged by the threshold "
            "alone (no significance test)"
        )
    counted = rows["method"] == METHOD_COUNT if len(rows) else pd.Series(dtype=bool)
    if counted.any():
        threshold = config.metric_thresholds.get("instructions_per_image", config.threshold)
        warnings.append(
            f"{rows.loc[counted, 'case_id'].nunique()} case(s) compared on instructions per image "
            f"(callgrind; repeat within 0.005% here): regressed = grew more than the threshold "
            f"({threshold:.0%} by default), no test needed"
        )
    on_rounds = rows["method"] == METHOD_TEST if len(rows) else pd.Series(dtype=bool)
    if on_rounds.any():
        warnings.append(
            f"{rows.loc[on_rounds, 'case_id'].nunique()} case(s) tested on rounds: fewer than "
            f"{config.min_runs} runs a side, so a shift of a whole run (8-34% between runs of the "
            "same code on a shared 2-core VM) can pass for a regression; for a gate, compare "
            f"{config.min_runs}+ runs a side (`imgbench ci --repeats 10`)"
        )
    return ComparisonResult(
        rows=rows,
        config=config,
        baseline=base_info,
        candidate=cand_info,
        warnings=warnings,
        only_in_baseline=sorted(set(base) - set(cand)),
        only_in_candidate=sorted(set(cand) - set(base)),
        ignored=ignored,
        machines=compare_machines(baseline, candidate, case),
    )
