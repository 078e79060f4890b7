"""Regression thresholds and ignores, read from ``[tool.imgbench.regression]`` in pyproject.toml.

A threshold is the practical margin: the relative growth of a cost (round time, latency, memory)
below which a change does not matter, even when it is statistically significant. Rules are
applied in file order and the last matching rule wins, so put general rules first.
"""

from __future__ import annotations

import fnmatch
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from imgbench.results.schema import HIGHER_IS_BETTER

CORRECTIONS = ("holm", "bh")
DECISIONS = ("ci", "median")

# Per-image latency quantiles are one value per run (no raw samples to test) and another job on
# the machine moved them by up to 10x between runs of the same code (docs/regression.md): they
# are reported, but do not fail the check unless the config lists them in ``gate``.
DEFAULT_ADVISORY = ("latency_ms_median", "latency_ms_p90", "latency_ms_p99")
DEFAULT_METRICS = tuple(
    m for m in HIGHER_IS_BETTER if m not in ("mb_per_s_median", "megapixels_per_s_median")
)
# instruction counts repeat within 0.005% here: a 5% growth is real work, never noise
DEFAULT_METRIC_THRESHOLDS = {"instructions_per_image": 0.05}


def case_matches(case_id: str, pattern: str) -> bool:
    """An exact case id (brackets and all), or an fnmatch glob such as ``read/pillow/*``."""
    return case_id == pattern or fnmatch.fnmatchcase(case_id, pattern)


class ConfigError(ValueError):
    """The regression table in pyproject.toml is malformed."""


@dataclass(frozen=True)
class Rule:
    """A threshold for the cases of a stage and/or a case-id glob, optionally for one metric."""

    threshold: float
    stage: str | None = None
    case: str | None = None
    metric: str | None = None

    def matches(self, case_id: str, stage: str | None, metric: str) -> bool:
        if self.stage is not None and self.stage != stage:
            return False
        if self.case is not None and not case_matches(case_id, self.case):
            return False
        return self.metric is None or self.metric == metric


@dataclass(frozen=True)
class Ignore:
    """Cases left out of the verdict (still listed in the report, with the reason)."""

    reason: str
    stage: str | None = None
    case: str | None = None

    def matches(self, case_id: str, stage: str | None) -> bool:
        if self.stage is not None and self.stage != stage:
            return False
        return self.case is None or case_matches(case_id, self.case)


@dataclass(frozen=True)
class RegressionConfig:
    threshold: float = 0.10  # default practical margin: 10% more time / latency / memory
    alpha: float = 0.01  # significance after correction across the cases compared
    correction: str = "holm"  # holm | bh (Benjamini-Hochberg)
    decide_on: str = "ci"  # ci: the worse end of the CI reaches the threshold; median: the estimate
    confidence: float = 0.95  # two-sided bootstrap confidence level
    resamples: int = 2000  # bootstrap resamples
    seed: int = 0  # bootstrap seed, so a report is reproducible
    # with at least this many runs per side, the test and the CI are on the runs' medians: the
    # unit that varies between processes and moments of the machine (docs/regression.md)
    # (8: a permutation test of 8 vs 8 runs can reach p = 1/12,870, small enough for Holm over
    # a hundred cases; 5 vs 5 cannot go below 1/252)
    min_runs: int = 8
    # one throughput metric per case is tested (images/s); MB/s and megapixels/s are the same
    # ratio of the same rounds, so testing them too only adds comparisons to correct for
    metrics: tuple[str, ...] = DEFAULT_METRICS
    advisory: tuple[str, ...] = DEFAULT_ADVISORY  # reported, never fail the check
    metric_thresholds: dict[str, float] = field(
        default_factory=lambda: dict(DEFAULT_METRIC_THRESHOLDS)
    )
    # a tested wall-time verdict blocks only where its power to catch a slowdown of the
    # threshold reaches this (None: every verdict of a gating metric blocks); imgbench ci sets
    # 0.95 for wall time (compare/power.py)
    min_power: float | None = None
    rules: tuple[Rule, ...] = ()
    ignores: tuple[Ignore, ...] = ()
    source: str = "defaults"

    def threshold_for(self, case_id: str, stage: str | None, metric: str) -> float:
        value = self.metric_thresholds.get(metric, self.threshold)
        for rule in self.rules:
            if rule.matches(case_id, stage, metric):
                value = rule.threshold
        return value

    def gates(self, metric: str) -> bool:
        """Whether a regression of this metric fails the check (else it is advisory)."""
        return metric not in self.advisory

    def ignored(self, case_id: str, stage: str | None) -> str | None:
        """The reason a case is ignored, or None."""
        for ignore in self.ignores:
            if ignore.matches(case_id, stage):
                return ignore.reason
        return None

    def with_overrides(self, **values: Any) -> RegressionConfig:
        """Command-line overrides (None = keep the configured value)."""
        chosen = {k: v for k, v in values.items() if v is not None}
        return _validated(replace(self, **chosen))


def _fraction(name: str, value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < 10:
        raise ConfigError(f"{where}: {name} must be a number like 0.1 (10%), got {value!r}")
    return float(value)


def _validated(cfg: RegressionConfig) -> RegressionConfig:
    where = cfg.source
    _fraction("threshold", cfg.threshold, where)
    if not 0 < cfg.alpha < 1:
        raise ConfigError(f"{where}: alpha must be between 0 and 1, got {cfg.alpha!r}")
    if not 0 < cfg.confidence < 1:
        raise ConfigError(f"{where}: confidence must be between 0 and 1, got {cfg.confidence!r}")
    if cfg.correction not in CORRECTIONS:
        raise ConfigError(
            f"{where}: correction must be one of {CORRECTIONS}, got {cfg.correction!r}"
        )
    if cfg.min_power is not None and not 0 < cfg.min_power <= 1:
        raise ConfigError(f"{where}: min_power must be in (0, 1], got {cfg.min_power!r}")
    if cfg.decide_on not in DECISIONS:
        raise ConfigError(f"{where}: decide_on must be one of {DECISIONS}, got {cfg.decide_on!r}")
    unknown = [m for m in cfg.metrics if m not in HIGHER_IS_BETTER]
    unknown += [m for m in cfg.metric_thresholds if m not in HIGHER_IS_BETTER]
    unknown += [m for m in cfg.advisory if m not in HIGHER_IS_BETTER]
    if unknown:
        raise ConfigError(
            f"{where}: unknown metrics {unknown}; known: {', '.join(HIGHER_IS_BETTER)}"
        )
    return cfg


def config_from_table(table: dict[str, Any], source: str = "config") -> RegressionConfig:
    """Build a config from the ``[tool.imgbench.regression]`` table (a dict)."""
    known = {
        "threshold",
        "alpha",
        "correction",
        "decide_on",
        "confidence",
        "resamples",
        "seed",
        "min_runs",
        "min_power",
        "metrics",
        "advisory",
        "metric_thresholds",
        "rules",
        "ignore",
    }
    unknown = set(table) - known
    if unknown:
        raise ConfigError(f"{source}: unknown keys {sorted(unknown)}; known: {sorted(known)}")
    base = RegressionConfig()
    thresholds = dict(base.metric_thresholds)
    for metric, value in (table.get("metric_thresholds") or {}).items():
        thresholds[metric] = _fraction(f"metric_thresholds.{metric}", value, source)
    rules = []
    for i, raw in enumerate(table.get("rules") or []):
        where = f"{source}: rules[{i}]"
        if not isinstance(raw, dict) or "threshold" not in raw:
            raise ConfigError(f"{where}: needs a threshold (and a stage, case or metric)")
        extra = set(raw) - {"threshold", "stage", "case", "metric"}
        if extra:
            raise ConfigError(f"{where}: unknown keys {sorted(extra)}")
        rules.append(
            Rule(
                threshold=_fraction("threshold", raw["threshold"], where),
                stage=raw.get("stage"),
                case=raw.get("case"),
                metric=raw.get("metric"),
            )
        )
    ignores = []
    for i, raw in enumerate(table.get("ignore") or []):
        where = f"{source}: ignore[{i}]"
        if not isinstance(raw, dict) or not raw.get("reason"):
            raise ConfigError(f"{where}: an ignored case needs a reason")
        if not raw.get("stage") and not raw.get("case"):
            raise ConfigError(f"{where}: give a stage or a case glob to ignore")
        ignores.append(
            Ignore(reason=str(raw["reason"]), stage=raw.get("stage"), case=raw.get("case"))
        )
    cfg = replace(
        base,
        threshold=table.get("threshold", base.threshold),
        alpha=table.get("alpha", base.alpha),
        correction=str(table.get("correction", base.correction)).lower(),
        decide_on=str(table.get("decide_on", base.decide_on)).lower(),
        confidence=table.get("confidence", base.confidence),
        resamples=int(table.get("resamples", base.resamples)),
        seed=int(table.get("seed", base.seed)),
        min_runs=max(2, int(table.get("min_runs", base.min_runs))),
        min_power=table.get("min_power", base.min_power),
        metrics=tuple(table.get("metrics", base.metrics)),
        advisory=tuple(table.get("advisory", base.advisory)),
        metric_thresholds=thresholds,
        rules=tuple(rules),
        ignores=tuple(ignores),
        source=source,
    )
    return _validated(cfg)


def load_config(pyproject: Path | None = None) -> RegressionConfig:
    """The regression table of ``pyproject`` (default: the checkout's), or the defaults."""
    if pyproject is None:
        from imgbench.paths import repo_root

        root = repo_root()
        if root is None:
            return RegressionConfig()
        pyproject = root / "pyproject.toml"
    if not pyproject.is_file():
        return RegressionConfig()
    try:
        doc = tomllib.loads(pyproject.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{pyproject}: not readable TOML ({exc})") from None
    table = doc.get("tool", {}).get("imgbench", {}).get("regression")
    if table is None:
        return RegressionConfig(source=f"{pyproject} (no [tool.imgbench.regression]: defaults)")
    return config_from_table(table, source=f"{pyproject} [tool.imgbench.regression]")
