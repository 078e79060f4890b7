"""A bound for the cores you don't have: a loader configuration's images/s at N cores, from the
rows already measured at the worker counts of the sweep (docs/loaders.md, "A bound for the cores
you don't have").

One configuration is every loader row that differs only in its workers: the same machine,
dataset, library, variant and parameters once those that follow from the worker count are set
aside (``WORKER_PARAMS``: ``workers``, ``batches_per_round``, the worker-only DataLoader settings).
Each row enters at **N = the cores doing the work**:

- a row with workers (processes or threads) at ``N = min(workers, cores)``, ``cores`` the row's
  ``cpu_cores_logical`` (or the cores the caller says the run had: a run under ``taskset`` records
  the machine's count, not its affinity mask);
- the main-process row (0 workers) at ``N = 1``: the serial reference, which pays no hand-off
  between processes; a 0-worker row that kept more than ``SERIAL_REFERENCE_BUSY`` cores busy
  (``extra_json.cpu_cores_busy``: a library's own threads, tf.data's AUTOTUNE) is no serial
  reference and is left out, with the reason;
- where several rows share an N (0 and 1 worker at N = 1; more workers than cores at N = cores),
  the fastest is the configuration's figure at N cores: what a user with N cores would set.

With at least ``MIN_CORE_COUNTS`` distinct N, the Universal Scalability Law
``X(N) = lambda N / (1 + sigma (N - 1) + kappa N (N - 1))`` is fitted (least squares on the log of
the rates; ``lambda > 0``, ``0 <= sigma <= 1``, ``kappa >= 0``) and a figure at N cores is a
*prediction* with a 95% interval: ``BOOTSTRAP`` refits, each on every row's rounds resampled with
replacement and its median moved by one draw of the between-session spread
(``imgbench.answer.intervals.run_to_run_cv``), the 2.5th and 97.5th percentiles of the refits'
figure at N.

With fewer distinct N the fit is under-determined, and the figure is a *bound*, not a
prediction: linear scaling from the best per-core rate the rows measured (``N x`` the largest
``X / N``, its upper end from that row's interval), capped by the serial part where a row carries
one (``extra_json.feed_stage_ms_median``: the per-batch parts the main process does itself, every
stage but ``wait``; no number of cores shortens them). Its lower end is the fastest figure already
measured at N cores or fewer (the low end of its interval).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from imgbench.answer.intervals import Interval, round_throughputs, row_interval, run_to_run_cv
from imgbench.answer.recommend import Answer
from imgbench.answer.rows import Configuration, Row, is_disk_pass, is_experiment, number, where
from imgbench.results.schema import json_object

PREDICTION, BOUND = "prediction", "bound"
MIN_CORE_COUNTS = 3  # the USL has three parameters: fewer distinct N leave it under-determined
BOOTSTRAP = 200  # refits behind a prediction's interval
SEED = 0  # the refits' draws: the same rows give the same interval
LOW_PERCENTILE, HIGH_PERCENTILE = 2.5, 97.5  # a 95% interval, as every figure of the answer
SERIAL_REFERENCE_BUSY = 1.5  # a 0-worker row busier than this many cores is no serial reference
MAX_CORES = 4096  # the largest machine the cores needed are searched up to
# parameters a loader case sets from its worker count: set aside to find a configuration's rows
# (imgbench.loaders.cases: batches per round grow with the workers; prefetch, persistence, pinning
# and the start method exist only with workers, and a non-default one is in the variant's knobs)
WORKER_PARAMS = frozenset(
    {
        "workers",
        "batches_per_round",
        "prefetch_factor",
        "persistent_workers",
        "pin_memory",
        "start_method",
    }
)
SAME_CASE = ("case_id", "machine_id", "dataset_fingerprint", "environment")
KEY_COLUMNS = ("stage", "library", "variant", "environment", "allocator", "task")
FEED_WAIT = "wait"  # feed_stage_ms_median's wait for the workers' batch: not the main process's


def configuration_key(row: Row) -> str:
    """What one configuration's rows share whatever their workers: the columns that name the
    case, the dataset, and the parameters that do not follow from the worker count."""
    params = json_object(row.get("params_json"))
    kept = {k: v for k, v in params.items() if k not in WORKER_PARAMS}
    parts = [_text(row.get(c)) for c in (*KEY_COLUMNS, "dataset_fingerprint")]
    return "|".join([*parts, json.dumps(kept, sort_keys=True, default=str)])


def _text(value: Any) -> str:
    """A cell as text, every kind of missing (None, NaN, pd.NA) as ''."""
    try:
        missing = value is None or bool(pd.isna(value))
    except (TypeError, ValueError):  # a list or an array: not missing
        missing = False
    return "" if missing else str(value)


def configuration_label(config: Configuration) -> str:
    """The configuration's short label without its workers (every worker count is one model)."""
    parts = config.short_label().split(" · ")
    return " · ".join(parts[:1] + parts[2:])


def loader_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """Timed ok loader rows a configuration's scaling is read from: no experiment (AU emulation,
    the memory experiment), no disk session's cold rows; the newest row of each case."""
    if frame.empty:
        return frame
    ok = (frame["stage"] == "loader") & (frame["status"] == "ok")
    rates = pd.to_numeric(frame["images_per_s_median"], errors="coerce")
    rows = frame[ok.to_numpy(dtype=bool, na_value=False) & rates.notna().to_numpy()]
    if rows.empty:
        return rows
    rows = rows[where(rows, lambda r: not is_experiment(r) and not is_disk_pass(r))]
    # one case on another machine, dataset (a run's real-sample session) or environment is another
    same = [rows[c].fillna("?").astype(str) for c in SAME_CASE]
    return rows.sort_values("created_utc", kind="stable").groupby(same).tail(1)


def configuration_rows(rows: pd.DataFrame, row: Row) -> pd.DataFrame:
    """The rows of ``rows`` (one machine's) of ``row``'s configuration, at every worker count."""
    if rows.empty:
        return rows
    key = configuration_key(row)
    return rows[where(rows, lambda r: configuration_key(r) == key)]


@dataclass(frozen=True)
class Point:
    """A configuration's figure at N cores: the fastest of its rows there."""

    cores: int  # N: the cores doing the work
    workers: int
    images_per_s: float
    interval: Interval  # the row's 95% interval: its rounds, widened by the between-session spread
    case_id: str
    rates: tuple[float, ...]  # images/s of each timed round (the refits resample them)
    cv: float  # the between-session spread folded into the interval and the refits


def _cores_of(row: Row, cores: int | None) -> int | None:
    if cores is not None:
        return cores
    found = number(row.get("cpu_cores_logical"))
    return int(found) if found else None


def _point(row: Row, cores: int | None) -> Point | str:
    """The row at its N, or why it is left out."""
    workers = int(number(row.get("workers")) or 0)
    extra = json_object(row.get("extra_json"))
    busy = number(extra.get("cpu_cores_busy"))
    if workers == 0 and busy is not None and busy > SERIAL_REFERENCE_BUSY:
        return (
            f"{row.get('case_id')}: 0 workers but {busy:.1f} cores busy (the library's own "
            "threads): no serial reference"
        )
    rate = number(row.get("images_per_s_median"))
    if rate is None or rate <= 0:
        return f"{row.get('case_id')}: no images/s"
    machine = _cores_of(row, cores)
    n = 1 if workers == 0 else min(workers, machine) if machine else workers
    cv = run_to_run_cv("loader", workers)
    return Point(
        cores=n,
        workers=workers,
        images_per_s=rate,
        interval=row_interval(row, cv),
        case_id=str(row.get("case_id")),
        rates=tuple(float(x) for x in round_throughputs(row)),
        cv=cv,
    )


def points(rows: pd.DataFrame, cores: int | None = None) -> tuple[list[Point], list[str]]:
    """One configuration's figure per N (the fastest row there), fewest cores first, and the rows
    left out with the reason. ``cores``: the cores the rows' run had, over their own column."""
    best: dict[int, Point] = {}
    left_out: list[str] = []
    for _, row in rows.iterrows():
        found = _point(row, cores)
        if isinstance(found, str):
            left_out.append(found)
            continue
        if found.cores not in best or found.images_per_s > best[found.cores].images_per_s:
            best[found.cores] = found
    return [best[n] for n in sorted(best)], left_out


@dataclass(frozen=True)
class UslFit:
    """``X(N) = lam N / (1 + sigma (N - 1) + kappa N (N - 1))``."""

    lam: float
    sigma: float
    kappa: float

    def rate(self, cores: Any) -> Any:
        """Images/s at ``cores`` (a number or an array)."""
        n = np.asarray(cores, dtype=float)
        return self.lam * n / (1.0 + self.sigma * (n - 1.0) + self.kappa * n * (n - 1.0))

    @property
    def peak(self) -> float | None:
        """The N of the highest rate (``sqrt((1 - sigma) / kappa)``); None without contention."""
        if self.kappa <= 0:
            return None
        return math.sqrt(max(1.0 - self.sigma, 0.0) / self.kappa)

    @property
    def ceiling(self) -> float:
        """The highest rate any N reaches (inf: linear scaling, no sigma and no kappa)."""
        if self.peak is not None:
            return float(self.rate(max(self.peak, 1.0)))
        return self.lam / self.sigma if self.sigma > 0 else math.inf


def fit_usl(cores: Sequence[float], rates: Sequence[float]) -> UslFit:
    """Least squares on the log of the rates (each point weighs its relative error)."""
    from scipy.optimize import least_squares  # 0.3 s to import: only a fit pays for it

    n = np.asarray(cores, dtype=float)
    x = np.asarray(rates, dtype=float)
    per_core = x / n
    start = np.array([float(per_core[np.argmin(n)]), 0.05, 1e-4])
    upper = np.array([np.inf, 1.0, np.inf])

    def residuals(p: np.ndarray) -> np.ndarray:
        return np.asarray(np.log(UslFit(*p).rate(n)) - np.log(x), dtype=float)

    found = least_squares(residuals, start, bounds=(np.array([1e-12, 0.0, 0.0]), upper))
    lam, sigma, kappa = (float(v) for v in found.x)
    return UslFit(lam, sigma, kappa)


def _draw(point: Point, rng: np.random.Generator) -> float:
    """One refit's figure for a point: the median of its rounds resampled with replacement (a
    row without rounds: its median), moved by one draw of the between-session spread."""
    if len(point.rates) >= 2:
        median = float(np.median(rng.choice(np.asarray(point.rates), size=len(point.rates))))
    else:
        median = point.images_per_s
    return median * math.exp(point.cv * float(rng.standard_normal()))


def refits(found: Sequence[Point], count: int = BOOTSTRAP, seed: int = SEED) -> list[UslFit]:
    """``count`` fits on resampled figures (``_draw``)."""
    rng = np.random.default_rng(seed)
    cores = [p.cores for p in found]
    return [fit_usl(cores, [_draw(p, rng) for p in found]) for _ in range(count)]


@dataclass(frozen=True)
class CoresNeeded:
    """The cores a configuration needs for a rate: ``cores`` None when no N reaches it."""

    rate: float
    cores: int | None
    text: str


@dataclass(frozen=True)
class ScalingModel:
    """What a configuration's rows say about N cores: a USL prediction or a bound."""

    kind: str  # PREDICTION or BOUND
    label: str
    points: tuple[Point, ...]
    fit: UslFit | None = None
    samples: tuple[UslFit, ...] = ()  # the refits behind a prediction's interval
    serial_s_per_image: float | None = None  # a bound's cap: the main process's own part
    left_out: tuple[str, ...] = field(default=())

    @property
    def per_core(self) -> Point:
        """The row with the best per-core rate (a bound's base)."""
        return max(self.points, key=lambda p: p.images_per_s / p.cores)

    @property
    def cap(self) -> float:
        """The rate the serial part allows on any number of cores (inf without one)."""
        return 1.0 / self.serial_s_per_image if self.serial_s_per_image else math.inf

    def at(self, cores: int) -> Interval:
        """The figure at ``cores`` with its 95% interval; a bound's value is the bound, its low
        end the fastest already measured at that many cores or fewer."""
        if self.fit is not None:
            value = float(self.fit.rate(cores))
            spread = np.array([float(f.rate(cores)) for f in self.samples] or [value])
            low, high = np.percentile(spread, [LOW_PERCENTILE, HIGH_PERCENTILE])
            return Interval(value, min(float(low), value), max(float(high), value))
        base = self.per_core
        value = min(cores * base.images_per_s / base.cores, self.cap)
        high = min(cores * base.interval.high / base.cores, self.cap)
        measured = [p.interval.low for p in self.points if p.cores <= cores]
        low = min(max(measured), value) if measured else 0.0
        return Interval(value, low, max(high, value))

    def text_at(self, cores: int) -> str:
        """``2,100 images/s at 16 cores (95% interval 1,900-2,300): prediction (...)`` or
        ``at most 5,800 images/s at 16 cores (...): bound (...)``."""
        found, at = self.at(cores), _cores_text(cores)
        if self.kind == PREDICTION:
            return (
                f"{found.value:,.0f} images/s at {at} (95% interval "
                f"{found.low:,.0f}-{found.high:,.0f}): {self.label}"
            )
        fewer = [p for p in self.points if p.cores <= cores]
        floor = (
            f"from {found.low:,.0f}, measured at "
            f"{_cores_text(max(fewer, key=lambda p: p.interval.low).cores)},"
            if fewer
            else f"nothing measured at {at} or fewer; up"
        )
        return (
            f"at most {found.value:,.0f} images/s at {at} ({floor} to {found.high:,.0f}, the "
            f"bound's 95% upper end): {self.label}, not a prediction"
        )

    def cores_for(self, rate: float) -> CoresNeeded:
        """The fewest cores whose figure reaches ``rate``, or why none does."""
        if self.fit is not None:
            return _fit_cores_for(self.fit, self.samples, rate)
        return self._bound_cores_for(rate)

    def _bound_cores_for(self, rate: float) -> CoresNeeded:
        if rate > self.cap:
            own_ms = 1e3 * (self.serial_s_per_image or 0.0)
            return CoresNeeded(
                rate,
                None,
                f"not reachable: the main process's own part ({own_ms:.2f} ms per image) caps "
                f"it at {self.cap:,.0f} images/s on any number of cores",
            )
        base = self.per_core
        needed = max(1, math.ceil(rate * base.cores / base.interval.high))
        return CoresNeeded(
            rate,
            needed,
            f"at least {_cores_text(needed)} (a bound: fewer cannot reach it even at linear "
            "scaling; how many more it takes, these rows cannot tell)",
        )


def _cores_text(cores: int) -> str:
    return "1 core" if cores == 1 else f"{cores} cores"


def _needed(fit: UslFit, rate: float) -> int | None:
    """The smallest N in 1..MAX_CORES whose fitted rate reaches ``rate``."""
    if fit.ceiling < rate:
        return None
    cores = np.arange(1, MAX_CORES + 1)
    reached = np.nonzero(fit.rate(cores) >= rate)[0]
    return int(cores[reached[0]]) if reached.size else None


def _fit_cores_for(fit: UslFit, samples: Sequence[UslFit], rate: float) -> CoresNeeded:
    needed = _needed(fit, rate)
    if needed is None:
        if fit.peak is not None:
            reason = f"the fit peaks at N* = {fit.peak:.0f} cores ({fit.ceiling:,.0f} images/s)"
        else:
            reason = f"the fit levels off at {fit.ceiling:,.0f} images/s"
        return CoresNeeded(rate, None, f"not reachable: {reason}")
    others = sorted(math.inf if n is None else n for n in (_needed(f, rate) for f in samples))
    text = _cores_text(needed)
    if others:
        low, high = (
            others[round(q / 100 * (len(others) - 1))] for q in (LOW_PERCENTILE, HIGH_PERCENTILE)
        )
        missed = sum(1 for n in others if n == math.inf)
        upper = "never" if high == math.inf else f"{high:.0f}"
        text += (
            f" (95% of the refits: {low:.0f} to {upper}"
            if low < math.inf
            else " (the refits: never"
        )
        text += f"; {missed} of {len(others)} never reach it)" if missed else ")"
    return CoresNeeded(rate, needed, text)


def _serial_s_per_image(rows: pd.DataFrame) -> float | None:
    """The main process's own part per image (``feed_stage_ms_median`` but ``wait``, over the
    batch size), the smallest any row carries; None where none carries one."""
    found = []
    for _, row in rows.iterrows():
        stages = json_object(row.get("extra_json")).get("feed_stage_ms_median")
        batch = number(row.get("batch_size"))
        if not isinstance(stages, dict) or not batch:
            continue
        own = [number(v) for k, v in stages.items() if k != FEED_WAIT]
        total = sum(v for v in own if v is not None)
        if total > 0:
            found.append(total / 1e3 / batch)
    return min(found) if found else None


def _counts(found: Iterable[Point]) -> str:
    return ", ".join(str(p.cores) for p in found)


def scaling_model(rows: pd.DataFrame, cores: int | None = None) -> ScalingModel | None:
    """The scaling model of one configuration's rows (None without a usable row). ``cores``: the
    cores the run had when the rows' own column does not say it (a run under ``taskset``)."""
    found, left_out = points(rows, cores)
    if not found:
        return None
    workers = sorted({p.workers for p in found})
    if len(found) >= MIN_CORE_COUNTS:
        fit = fit_usl([p.cores for p in found], [p.images_per_s for p in found])
        label = (
            f"prediction (USL fit over workers {workers[0]}..{workers[-1]}: N = {_counts(found)}; "
            f"sigma {fit.sigma:.3f}, kappa {fit.kappa:.5f})"
        )
        return ScalingModel(
            PREDICTION, label, tuple(found), fit, tuple(refits(found)), left_out=tuple(left_out)
        )
    serial = _serial_s_per_image(rows)
    base = max(found, key=lambda p: p.images_per_s / p.cores)
    origin = "one core" if base.cores == 1 else f"the per-core rate at {base.cores} cores"
    label = (
        f"bound (linear from {origin}; the fit needs {MIN_CORE_COUNTS} core counts, these rows "
        f"have N = {_counts(found)}"
        + (f"; capped by the main process's {1e3 * serial:.2f} ms per image" if serial else "")
        + ")"
    )
    return ScalingModel(
        BOUND, label, tuple(found), serial_s_per_image=serial, left_out=tuple(left_out)
    )


@dataclass(frozen=True)
class Subject:
    """One configuration of the answer (the pick, the common default) and its scaling."""

    role: str  # "pick" | "common default"
    configuration: Configuration | None
    model: ScalingModel | None
    missing: str | None = None  # why there is no model
    measured_cores: int | None = None  # the cores of the machine its rows were measured on

    def name(self) -> str:
        return configuration_label(self.configuration) if self.configuration else "not measured"


def _row_of(rows: pd.DataFrame, case_id: str) -> pd.Series | None:
    found = rows[rows["case_id"].astype(str) == case_id]
    return None if found.empty else found.iloc[-1]


def _subject(role: str, rows: pd.DataFrame, case_id: str | None, cores: int | None) -> Subject:
    if case_id is None:
        return Subject(role, None, None, f"the {role} was not measured on this machine and dataset")
    row = _row_of(rows, case_id)
    if row is None:
        return Subject(role, None, None, f"the {role}'s row ({case_id}) is no loader row here")
    config = Configuration.of(row)
    model = scaling_model(configuration_rows(rows, row), cores)
    machine = cores if cores is not None else _cores_of(row, None)
    if model is None:
        return Subject(role, config, None, "no usable row at any worker count", machine)
    return Subject(role, config, model, None, machine)


def answer_rows(frame: pd.DataFrame, answer: Answer) -> pd.DataFrame:
    """The loader rows of the answer's machine and dataset."""
    rows = loader_rows(frame)
    if rows.empty:
        return rows
    same = (rows["machine_id"].astype(str) == answer.machine_id) & (
        rows["dataset_fingerprint"].astype(str) == answer.dataset_fingerprint
    )
    return rows[same.to_numpy(dtype=bool, na_value=False)]


def answer_subjects(frame: pd.DataFrame, answer: Answer, cores: int | None = None) -> list[Subject]:
    """The answer's pick and the common default, each with its configuration's scaling model.
    ``cores``: the cores the rows' run had, over their own column (a run under ``taskset``)."""
    rows = answer_rows(frame, answer)
    best = answer.best
    pick = (best.matrix_case_id or best.case_id) if best is not None else None
    default = answer.default_cores or answer.default_0
    return [
        _subject("pick", rows, pick, cores),
        _subject(
            "common default",
            rows,
            (default.matrix_case_id or default.case_id) if default is not None else None,
            cores,
        ),
    ]


def _machine_rows(frame: pd.DataFrame, machine_id: str | None) -> tuple[pd.DataFrame, str]:
    """This machine's rows where it has loader rows, else every machine's; and which."""
    if machine_id is not None and not frame.empty:
        mine = frame[(frame["machine_id"].astype(str) == machine_id).to_numpy(dtype=bool)]
        if not loader_rows(mine).empty:
            return mine, "this machine's rows"
    return frame, "rows of another machine"


def ranks_text_at(model: ScalingModel, cores: int, ranks: int) -> str:
    """R training ranks sharing ``cores``: each rank's loader on its share of the cores (the
    cores divided, at least one each), the total R times one rank's figure at its share. A
    figure on the assumption that the ranks share nothing but the cores (no memory bandwidth
    or page cache contention): the rows measured at R ranks say how far that holds here."""
    share = max(1, cores // ranks)
    one = model.at(share)
    total = Interval(ranks * one.value, ranks * one.low, ranks * one.high)
    head = (
        f"with {ranks} ranks sharing {_cores_text(cores)}: give each rank {share} worker"
        f"{'s' if share != 1 else ''}; "
    )
    if model.kind == PREDICTION:
        return head + (
            f"{total.value:,.0f} images/s in total (95% interval {total.low:,.0f}-"
            f"{total.high:,.0f}; {ranks} x one rank at {_cores_text(share)}, a prediction)"
        )
    return head + (
        f"at most {total.value:,.0f} images/s in total ({ranks} x one rank's bound at "
        f"{_cores_text(share)}, to {total.high:,.0f} at its 95% upper end; not a prediction)"
    )


def _subject_lines(
    subject: Subject, cores: int | None, step_rate: float | None, ranks: int = 1
) -> list[str]:
    head = f"{subject.role[0].upper()}{subject.role[1:]} ({subject.name()})"
    model = subject.model
    if model is None:
        return [f"{head}: {subject.missing}."]
    lines = []
    if cores is not None:
        lines.append(f"{head}: {model.text_at(cores)}.")
        if ranks > 1:
            lines.append(f"  {ranks_text_at(model, cores, ranks)}.")
    if step_rate is not None:
        needed = model.cores_for(step_rate)
        prefix = "  " if cores is not None else f"{head}: "
        lines.append(f"{prefix}to keep a step of {step_rate:,.0f} images/s busy: {needed.text}.")
        if ranks > 1 and needed.cores is not None:
            lines.append(
                f"  with {ranks} ranks, each with a step of {step_rate:,.0f} images/s: "
                f"{_cores_text(ranks * needed.cores)} in all ({needed.cores} per rank)."
            )
    lines += [f"  left out: {reason}." for reason in model.left_out]
    return lines


def scaling_lines(
    frame: pd.DataFrame,
    machine_id: str | None,
    cores: int | None,
    step_rate: float | None,
    ranks: int = 1,
) -> list[str] | None:
    """``imgbench advise --cores N [--step-rate R] [--ranks K]``: the answer's pick and the
    common default at N cores (a prediction or a bound, labelled), and the cores a step of R
    images/s needs; with K training ranks, the cores divided among them; None when the rows
    hold no answer."""
    from imgbench.answer.recommend import answers

    rows, whose = _machine_rows(frame, machine_id)
    answer = next((a for a in answers(rows) if a.best is not None), None)
    if answer is None:
        return None
    measured = f", {_cores_text(answer.cores)}" if answer.cores else ""
    lines = [
        f"The cores you don't have, from the loader rows of {answer.title}{measured} ({whose}; "
        'docs/loaders.md, "A bound for the cores you don\'t have"):'
    ]
    for subject in answer_subjects(rows, answer):
        lines += _subject_lines(subject, cores, step_rate, ranks)
    if ranks > 1 and answer.ranks_advice:
        lines.append(f"Measured here: {answer.ranks_advice}.")
    return lines
