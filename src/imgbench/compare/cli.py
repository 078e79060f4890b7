"""``imgbench compare`` and ``imgbench ci`` (registered by imgbench.cli).

Exit codes: 0 nothing regressed, 1 something regressed, 2 unusable input.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Annotated

import typer

from imgbench.compare.config import ConfigError, RegressionConfig, load_config
from imgbench.compare.report import render_terminal, write_reports
from imgbench.compare.sources import SourceError, load_side
from imgbench.compare.stats import CompareInputError, ComparisonResult, compare_frames
from imgbench.console import console, fail

WALL_MIN_POWER = 0.95  # imgbench ci: the power a wall-time verdict needs to block

ThresholdOpt = Annotated[
    float | None, typer.Option(help="default threshold, e.g. 0.1 = 10% (overrides pyproject)")
]
AlphaOpt = Annotated[float | None, typer.Option(help="significance level after correction")]
CorrectionOpt = Annotated[str | None, typer.Option(help="holm | bh")]
DecideOpt = Annotated[str | None, typer.Option(help="ci | median: what must pass the threshold")]
ConfigOpt = Annotated[
    Path | None, typer.Option(help="pyproject.toml with [tool.imgbench.regression]")
]
MarkdownOpt = Annotated[Path | None, typer.Option(help="write the Markdown report here")]
JsonOpt = Annotated[Path | None, typer.Option("--json", help="write the JSON report here")]


def _config(
    path: Path | None,
    threshold: float | None,
    alpha: float | None,
    correction: str | None,
    decide_on: str | None,
) -> RegressionConfig:
    if path is not None and not path.is_file():
        raise ConfigError(f"{path}: no such file")
    return load_config(path).with_overrides(
        threshold=threshold,
        alpha=alpha,
        correction=correction.lower() if correction else None,
        decide_on=decide_on.lower() if decide_on else None,
    )


def _finish(
    result: ComparisonResult,
    labels: tuple[str, str],
    markdown: Path | None,
    json_path: Path | None,
    everything: bool,
    machines: bool = False,
) -> None:
    render_terminal(result, console, labels, everything=everything, show_machines=machines)
    write_reports(result, markdown, json_path, labels)
    raise typer.Exit(result.exit_code)


def compare_command(
    baseline: Annotated[
        str,
        typer.Argument(
            help="run id (or unique prefix), parquet file or folder, or pytest-benchmark JSON"
        ),
    ],
    candidate: Annotated[str, typer.Argument(help="the same kinds as BASELINE")],
    results: Annotated[
        str, typer.Option(help="results folder (or s3://BUCKET/PREFIX) for run ids")
    ] = "results",
    markdown: MarkdownOpt = None,
    json_path: JsonOpt = None,
    allow_cross_machine: Annotated[
        bool, typer.Option(help="compare runs from different machines (warned in the report)")
    ] = False,
    threshold: ThresholdOpt = None,
    alpha: AlphaOpt = None,
    correction: CorrectionOpt = None,
    decide_on: DecideOpt = None,
    config: ConfigOpt = None,
    show_all: Annotated[
        bool, typer.Option("--all", help="show every metric of every case")
    ] = False,
    machines: Annotated[
        bool,
        typer.Option(
            "--machines",
            help="show the machine ratio per configuration and how much of it the machine "
            "reference explains, even when both sides ran at the same reference speed",
        ),
    ] = False,
    case: Annotated[
        str | None,
        typer.Option(
            help="the configuration the machine comparison sums up: a case id or glob "
            "(default: the baseline's answer's pick)"
        ),
    ] = None,
) -> None:
    """Compare two runs: exit 0 if nothing regressed, 1 if something did, 2 on unusable input.
    Runs from two machines (or one machine at two reference speeds) also get, per
    configuration, the machines' ratio and the share the machine reference explains."""
    try:
        cfg = _config(config, threshold, alpha, correction, decide_on)
        base, cand = load_side(baseline, results), load_side(candidate, results)
        result = compare_frames(
            base.frame, cand.frame, cfg, allow_cross_machine=allow_cross_machine, case=case
        )
    except (ConfigError, SourceError, CompareInputError) as exc:
        raise fail(str(exc)) from None
    _finish(result, (base.label, cand.label), markdown, json_path, show_all, machines)


def ci_command(
    base: Annotated[str, typer.Option(help="base revision, e.g. origin/main or a commit")],
    head: Annotated[str, typer.Option(help="head revision")] = "HEAD",
    profile: Annotated[
        str, typer.Option(help="quick | default | full, or one from pyproject.toml")
    ] = "quick",
    repeats: Annotated[
        int,
        typer.Option(
            min=1,
            help="alternating runs per side, the rounds split over them; 8 or more: the test "
            "is on the runs' medians (docs/regression.md)",
        ),
    ] = 10,
    measure: Annotated[
        str,
        typer.Option(
            help="instructions: one callgrind run a side, gated at 5% (deterministic) | wall: "
            "interleaved timed runs | both: instructions gate; wall-time verdicts block only where "
            "their measured power at the threshold is 95%, else advisory"
        ),
    ] = "instructions",
    rounds: Annotated[
        int | None, typer.Option(min=1, help="timed rounds per case and side (default: profile's)")
    ] = None,
    dataset: Annotated[str | None, typer.Option(help="folder of images or recipe name")] = None,
    keyword: Annotated[str | None, typer.Option("-k", help="pytest -k expression")] = None,
    repo: Annotated[Path | None, typer.Option(help="git checkout (default: this one)")] = None,
    workdir: Annotated[
        Path | None, typer.Option(help="keep worktrees' results here (default: a temp folder)")
    ] = None,
    markdown: MarkdownOpt = None,
    json_path: JsonOpt = None,
    threshold: ThresholdOpt = None,
    alpha: AlphaOpt = None,
    correction: CorrectionOpt = None,
    decide_on: DecideOpt = None,
    config: ConfigOpt = None,
    pytest_args: Annotated[
        list[str] | None, typer.Argument(help="more pytest arguments, after --")
    ] = None,
) -> None:
    """Run the profile for BASE and HEAD in this job, interleaved, then compare them."""
    from imgbench.compare.ci import CIError, CIPlan, run_ci
    from imgbench.paths import looks_like_path, repo_root
    from imgbench.profiles import ProfileError, get_profile

    try:
        get_profile(profile)  # an unknown profile fails here, not in every session
    except ProfileError as exc:
        raise fail(str(exc)) from None
    root = repo or repo_root()
    if root is None or not (root / ".git").exists():
        raise fail("not in a git checkout of the project; pass --repo")
    if dataset and looks_like_path(dataset):
        if not Path(dataset).exists():
            raise fail(f"dataset path does not exist: {dataset}")
        dataset = str(Path(dataset).resolve())
    if measure not in ("instructions", "wall", "both"):
        raise fail(f"--measure must be instructions, wall or both, not {measure!r}")
    try:
        cfg = _config(config or root / "pyproject.toml", threshold, alpha, correction, decide_on)
    except ConfigError as exc:
        raise fail(str(exc)) from None
    if measure in ("wall", "both"):
        # a wall-time verdict blocks only where its measured power at the threshold is 95%;
        # elsewhere (on a shared VM: nearly everywhere) it is advisory (docs/regression.md)
        cfg = cfg.with_overrides(min_power=cfg.min_power or WALL_MIN_POWER)
    plan = CIPlan(
        repo=root.resolve(),
        base=base,
        head=head,
        profile=profile,
        repeats=repeats,
        rounds=rounds,
        dataset=dataset,
        keyword=keyword,
        pytest_args=list(pytest_args or []),
        measure=measure,
    )
    with tempfile.TemporaryDirectory(prefix="imgbench-ci-") as tmp:
        work = (workdir or Path(tmp)).resolve()
        work.mkdir(parents=True, exist_ok=True)
        try:
            run = run_ci(
                plan, work, echo=lambda line: console.print(f"[dim]{line}[/]", highlight=False)
            )
            base_side = load_side(run.base_results)
            head_side = load_side(run.head_results)
            result = compare_frames(base_side.frame, head_side.frame, cfg)
        except (CIError, SourceError, CompareInputError) as exc:
            raise fail(str(exc)) from None
        labels = (f"{base} ({run.base_sha[:10]})", f"{head} ({run.head_sha[:10]})")
        _finish(result, labels, markdown, json_path, everything=False)
