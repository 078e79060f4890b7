"""The ``imgbench`` command: run the matrix, manage datasets and results, report the environment."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from imgbench.attrs import load_attr
from imgbench.console import console, err, fail
from imgbench.profiles import Profile, ProfileError, get_profile
from imgbench.stages import STAGES

app = typer.Typer(
    help="Benchmarks for image data pipelines, on your machine and your data.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
results_app = typer.Typer(help="List, show and import results.", no_args_is_help=True)
app.add_typer(results_app, name="results")

verify_app = typer.Typer(help="Check that every library does the same work.", no_args_is_help=True)
app.add_typer(verify_app, name="verify")


_attr = load_attr


# Sub-commands live with their part; each stage's `imgbench verify NAME` comes from its entry in
# imgbench.stages.
_SUBCOMMANDS: list[tuple[str, typer.Typer, str]] = [
    ("dataset", app, "imgbench.commands.dataset:dataset_app"),
    ("compare", app, "imgbench.compare.cli:compare_command"),
    ("ci", app, "imgbench.compare.cli:ci_command"),
    ("advise", app, "imgbench.answer.advise:advise_command"),
    ("report", app, "imgbench.report.cli:report_command"),
    ("profile", app, "imgbench.profiling.cli:profile_command"),
    ("export", app, "imgbench.export.cli:export_command"),
    ("final", app, "imgbench.final.cli:final_command"),
    ("disk", app, "imgbench.disks.cli:disk_app"),
    *((s.verify_name, verify_app, s.verify_command) for s in STAGES if s.verify_command),
]
for _name, _parent, _target in _SUBCOMMANDS:
    try:
        _obj = _attr(_target)
    except ModuleNotFoundError as _exc:
        if _exc.name and _target.startswith(_exc.name):
            continue  # that stage is not built yet
        err.print(f"[yellow]warning: `{_name}` unavailable: {_exc}[/]", highlight=False)
        continue
    except (ImportError, AttributeError) as _exc:  # a stage module that is broken: say so
        err.print(f"[yellow]warning: `{_name}` unavailable: {_exc}[/]", highlight=False)
        continue
    if isinstance(_obj, typer.Typer):
        _parent.add_typer(_obj, name=_name)
    else:
        _parent.command(_name)(_obj)


@app.command()
def run(
    profile: Annotated[
        str, typer.Option(help="quick | default | full, or one from pyproject.toml")
    ] = "default",
    dataset: Annotated[
        str | None, typer.Option(help="a folder of images, or a recipe name from datasets/")
    ] = None,
    keyword: Annotated[
        str | None, typer.Option("-k", help="pytest -k expression to select cases")
    ] = None,
    name: Annotated[str | None, typer.Option(help="--benchmark-save NAME")] = None,
    results: Annotated[
        str, typer.Option(help="folder for the parquet files, or s3://BUCKET/PREFIX")
    ] = "results",
    benches: Annotated[Path | None, typer.Option(help="folder of bench files")] = None,
    env_name: Annotated[
        str | None,
        typer.Option(
            "--env",
            help="only this environment: main, pillow-simd, tensorflow, mosaic, albumentationsx, mxnet",
        ),
    ] = None,
    with_envs: Annotated[
        bool,
        typer.Option(
            "--envs/--no-envs",
            help="also run the profile's isolated environments (built if missing)",
        ),
    ] = True,
    measure: Annotated[
        str,
        typer.Option(
            help="wall: timed rounds | instructions: one pass per CPU-bound case counted under "
            "valgrind's callgrind (deterministic; the regression gate's measure)"
        ),
    ] = "wall",
    ray_address: Annotated[
        str | None,
        typer.Option(
            "--ray",
            help="spread the cases over the nodes of this Ray cluster (HOST:PORT, auto, "
            "ray://HOST:PORT); each row carries its node's machine and label",
        ),
    ] = None,
    disk: Annotated[
        str,
        typer.Option(
            help="none | hdd | sata-ssd | nvme: the dataset and format stores on an emulated disk "
            "(a throttled loop device, root only; docs/disks.md)"
        ),
    ] = "none",
    controls: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            metavar="NAME=VALUE",
            help="a measuring control for every session and the final, over the profile's: any "
            "Settings name (rounds, max_images, min_round_s, host_max_ratio, ...; "
            "docs/measuring.md); repeatable",
        ),
    ] = None,
    pytest_args: Annotated[
        list[str] | None, typer.Argument(help="more pytest arguments, after --")
    ] = None,
) -> None:
    """Run the matrix through pytest-benchmark: one session (and parquet file) per env and dataset."""
    from imgbench.controls import session_dataset
    from imgbench.results.location import ResultsLocationError, results_location
    from imgbench.sessions import combined_exit_code, plan_sessions

    chosen, benches = _checked_run_inputs(profile, dataset, benches, measure)
    if controls:
        _set_controls(chosen, controls)
    if disk != "none":
        _check_disk(disk)
        pytest_args = [f"--imgbench-disk={disk}", *(pytest_args or [])]
    try:
        location = results_location(results)
        location.check()
    except ResultsLocationError as exc:
        raise fail(str(exc)) from None
    sessions = plan_sessions(
        chosen,
        benches,
        name or profile,
        dataset,
        env_name,
        with_envs,
        measure=measure,
        # with --disk the whole run is on that disk already; a Ray node sets up no disks; an
        # --env run measures that environment's cases (lab/repeatability.py: --env main -k loader)
        with_disks=disk == "none" and ray_address is None and env_name is None,
    )
    sessions = _drop_unavailable_disks(sessions)
    # a --ray run's sessions go to the cluster's nodes (no plan or progress here): an address
    # where nothing listens is then its one line, at once
    plan = None
    if ray_address is None:
        plan = _print_plan(sessions, chosen, results, keyword, env_name, measure)
    started = time.time()
    group = f"{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime(started))}-{name or profile}"
    if ray_address is not None:
        _run_on_ray(
            ray_address,
            sessions,
            chosen,
            keyword,
            pytest_args or [],
            location,
            group,
            create_envs=env_name is None,
        )
    _machine_reference(measure)
    child_env = {**os.environ, "IMGBENCH_RUN_GROUP": group}
    codes = _run_sessions(
        sessions, chosen, results, keyword, pytest_args or [], child_env, env_name, plan
    )
    if any(s.disk is not None for s in sessions):
        from imgbench.disks.records import cleanup_leftovers

        cleanup_leftovers()  # a disk session killed outright (kill -9, OOM) leaves nothing
    if codes and codes[-1] in (0, 1, 5) and measure == "wall":
        _hold_final(
            sessions, chosen.name, session_dataset(dataset, chosen), results, location, group
        )
    try:
        written = [
            location.path_of(f.name) for f in location.files() if f.mtime_ns >= started * 1e9 - 2e9
        ]
    except ResultsLocationError as exc:
        raise fail(str(exc)) from None
    _print_written(written)
    if codes and codes[-1] in (0, 1, 5) and measure == "wall":
        _print_answer(results, group)
    raise typer.Exit(combined_exit_code(codes))


def _print_plan(
    sessions: list[Any],
    chosen: Profile,
    results: str,
    keyword: str | None,
    env_name: str | None,
    measure: str,
) -> Any:
    """The run's plan and time estimate, first (imgbench.run_plan); None where it cannot be
    made, which never stops the run."""
    from imgbench.run_plan import make_plan

    to_build: list[str] = []
    if env_name is None:
        from imgbench.envs import is_built

        to_build = [
            e
            for e in dict.fromkeys(s.environment for s in sessions)
            if e != "main" and not is_built(e)
        ]
    try:
        plan = make_plan(
            sessions, chosen, results, keyword=keyword, to_build=to_build, measure=measure
        )
    except Exception as exc:  # an estimate is a courtesy: say why there is none, and go on
        err.print(f"[yellow]no plan or estimate: {exc}[/]", highlight=False, soft_wrap=True)
        return None
    for line in plan.lines():
        console.print(line, highlight=False, soft_wrap=True)
    return plan


def _machine_reference(measure: str) -> None:
    """The machine's reference figures, measured once before the sessions (a few seconds) and
    handed to every session and the final in ``$IMGBENCH_MACHINE_REFERENCE``, so each row of
    the run carries the same figures (imgbench.measure.reference); a failure is said here once
    and the run goes on with null columns. A value already in the variable is kept; a run
    counting instructions times none."""
    from imgbench.measure.reference import REFERENCE_ENV, reference_from_env

    if measure != "wall":
        return
    found = reference_from_env()
    assert found is not None  # measured when the variable is unset
    if found.error is None:
        console.print(f"[dim]{found.summary()}[/]", highlight=False, soft_wrap=True)
    elif not found.turned_off:
        err.print(f"[yellow]{found.summary()}; the run goes on[/]", highlight=False, soft_wrap=True)
    os.environ[REFERENCE_ENV] = found.to_env()


def _print_answer(results: str, group: str) -> None:
    """The run's answer in a few lines per machine, dataset and output size, worded as
    `imgbench report --markdown` words it (imgbench.run_answer), then the commands that show
    more; where its rows give no answer (e.g. -k read) the report's "No answer: ..." line says
    what to run."""
    from imgbench.run_answer import more_line, run_answer_lines

    try:
        lines = run_answer_lines(results, group)
    except Exception as exc:  # the rows are on disk; `imgbench report` may still read them
        err.print(f"[yellow]answer: not shown here ({exc})[/]", highlight=False, soft_wrap=True)
        lines = []
    if lines:
        console.print()
        console.print("answer (as `imgbench report --markdown` gives it):", highlight=False)
        for line in lines:
            console.print(line, markup=False, highlight=False, soft_wrap=True)
    console.print(more_line(), highlight=False, soft_wrap=True)


def _checked_run_inputs(
    profile: str, dataset: str | None, benches: Path | None, measure: str
) -> tuple[Profile, Path]:
    """The profile and the bench folder of a run, or one line saying which input is wrong."""
    try:
        chosen = get_profile(profile)
    except ProfileError as exc:
        raise fail(str(exc)) from None
    from imgbench.controls import DatasetPathError, session_dataset

    try:
        session_dataset(dataset, chosen)
    except DatasetPathError as exc:
        raise fail(str(exc)) from None
    if benches is None:
        from imgbench.paths import benches_dir

        try:
            benches = benches_dir()
        except FileNotFoundError as exc:
            raise fail(str(exc)) from None
    if measure not in ("wall", "instructions"):
        raise fail(f"--measure must be wall or instructions, not {measure!r}")
    return chosen, benches


def _set_controls(chosen: Profile, assignments: list[str]) -> None:
    """``--set NAME=VALUE``: checked now against the profile (one line naming a bad one), then
    handed to every session, isolated environment and the final through ``$IMGBENCH_SETTINGS``,
    the one channel every process of a run reads its controls from (imgbench.controls)."""
    from imgbench.controls import SETTINGS_ENV, resolve
    from imgbench.measure.settings import SettingsError, parse_assignments

    if bad := [a for a in assignments if any(c.isspace() for c in a)]:
        raise fail(f"--set {bad[0]!r}: NAME=VALUE without spaces")
    try:
        resolve(chosen, parse_assignments(assignments))
    except SettingsError as exc:
        raise fail(f"--set: {exc}") from None
    os.environ[SETTINGS_ENV] = " ".join([os.environ.get(SETTINGS_ENV, ""), *assignments]).strip()


def _check_disk(disk: str) -> None:
    """An emulated disk that exists and can be set up here, or one line saying why not."""
    from imgbench.disks.catalog import PROFILES
    from imgbench.disks.disk import unavailable_reason

    if disk not in PROFILES:
        raise fail(f"--disk must be one of {', '.join(PROFILES)}, not {disk!r}")
    if reason := unavailable_reason():
        raise fail(f"--disk {disk}: {reason}")


def _run_sessions(
    sessions: list[Any],
    chosen: Profile,
    results: str,
    keyword: str | None,
    pytest_args: list[str],
    child_env: dict[str, str],
    env_name: str | None,
    plan: Any = None,
) -> list[int]:
    """Each session's exit code, in order; stops after an interrupted or misused session. An
    environment that did not build is said and skipped (its cases have no rows). With a
    ``plan``, one progress line for the whole run (imgbench.progress)."""
    import shutil
    import tempfile

    from imgbench.progress import RunProgress
    from imgbench.sessions import build_missing_environments

    unbuilt: dict[str, str] = {}
    if env_name is None:
        unbuilt = build_missing_environments(
            [s.environment for s in sessions],
            say=lambda line: console.print(f"[dim]{line}[/]", highlight=False, soft_wrap=True),
        )
    progress = RunProgress(plan, console) if plan is not None else None
    scratch = Path(tempfile.mkdtemp(prefix="imgbench-progress-"))
    try:
        return _each_session(
            sessions,
            chosen,
            results,
            keyword,
            pytest_args,
            child_env,
            env_name,
            unbuilt,
            progress,
            scratch,
        )
    finally:
        if progress is not None:
            progress.close()
        shutil.rmtree(scratch, ignore_errors=True)


def _each_session(
    sessions: list[Any],
    chosen: Profile,
    results: str,
    keyword: str | None,
    pytest_args: list[str],
    child_env: dict[str, str],
    env_name: str | None,
    unbuilt: dict[str, str],
    progress: Any,
    scratch: Path,
) -> list[int]:
    from imgbench.progress import PROGRESS_ENV
    from imgbench.sessions import python_for_environment, run_session

    codes = []
    for k, session in enumerate(sessions, 1):
        progress_file = scratch / f"session-{k}.txt"
        if progress is not None:
            progress.start_session(k, progress_file)
        if session.environment in unbuilt:
            err.print(
                f"[yellow]skipped: the {session.environment} environment did not build "
                f"({unbuilt[session.environment]}); its cases have no rows in this run "
                f"(retry: imgbench env create {session.environment})[/]",
                highlight=False,
                soft_wrap=True,
            )
            continue
        try:
            python = python_for_environment(
                session.environment, create=env_name is None, say=console.print
            )
        except RuntimeError as exc:
            raise fail(str(exc)) from None
        args = session.args(python, chosen, results, keyword) + pytest_args
        console.print(f"[dim]$ {' '.join(args)}[/]", highlight=False, soft_wrap=True)
        env = {**session.process_env(child_env), PROGRESS_ENV: str(progress_file)}
        if progress is not None and progress.live:
            # the session's output passes through the run, printed above the progress line
            env.update(PYTHONUNBUFFERED="1", COLUMNS=str(console.width))
            if "NO_COLOR" not in env:
                env["PY_COLORS"] = "1"
            codes.append(run_session(args, env, on_line=progress.output, on_tick=progress.tick))
        else:
            codes.append(run_session(args, env))
        if codes[-1] not in (0, 1, 5):
            break  # interrupted or a usage error: stop here
    return codes


def _drop_unavailable_disks(sessions: list[Any]) -> list[Any]:
    """The profile's disk sessions, where emulated disks can be set up here; otherwise none of
    them (the real disk's pass alone has nothing to be compared with), said in one line."""
    disks = [s.disk for s in sessions if s.disk is not None]
    if not disks:
        return sessions
    from imgbench.disks.disk import unavailable_reason

    reason = unavailable_reason()
    if reason is None:
        return sessions
    emulated = ", ".join(d for d in disks if d != "none")
    err.print(
        f"[yellow]skipped: the disk sessions ({emulated} and the real disk's cold pass): "
        f"emulated disks unavailable here: {reason}; the run goes on[/]",
        highlight=False,
        soft_wrap=True,
    )
    return [s for s in sessions if s.disk is None]


def _hold_final(
    sessions: list[Any], profile: str, dataset: str, results: str, location: Any, group: str
) -> None:
    """After the sessions: the main session's best loader configurations head to head
    (imgbench.final), whose rows the answer uses; a final that cannot run says why."""
    from imgbench.final.cli import hold_final, main_session_rows
    from imgbench.results.store import load_results

    main = next((s for s in sessions if s.environment == "main" and not s.secondary), None)
    if main is None or main.allocator is not None:
        return
    try:
        frame = load_results(results).frame
    except Exception as exc:  # the rows are safe on disk; only the final is lost
        err.print(f"[yellow]final: the run's rows could not be read: {exc}[/]", highlight=False)
        return
    rows = main_session_rows(frame, main.save_name, group)
    if rows.empty:
        return  # no loader rows in this run (e.g. -k read): nothing to confirm
    result = hold_final(rows, location, profile, dataset, main.save_name, group, say=console.print)
    for line in result.lines:
        console.print(f"[dim]{line}[/]", highlight=False, soft_wrap=True)


def _print_written(written: list[Any]) -> None:
    console.print("results:" if written else "no results written", highlight=False)
    for path in written:
        console.print(f"  {path}", highlight=False, soft_wrap=True)


def _run_on_ray(
    address: str,
    sessions: list[Any],
    profile: Any,
    keyword: str | None,
    pytest_args: list[str],
    location: Any,
    group: str,
    *,
    create_envs: bool,
) -> None:
    """`imgbench run --ray`: the sessions over the cluster's nodes (imgbench.cluster)."""
    from imgbench.cluster import ClusterError, run_on_ray
    from imgbench.results.location import ResultsLocationError
    from imgbench.sessions import combined_exit_code

    try:
        codes, written = run_on_ray(
            address,
            sessions,
            profile,
            keyword,
            pytest_args,
            location,
            group,
            create_envs,
            say=lambda line: console.print(line, highlight=False, soft_wrap=True),
        )
    except (ClusterError, ResultsLocationError) as exc:
        raise fail(str(exc)) from None
    _print_written([location.path_of(name) for name in dict.fromkeys(written)])
    raise typer.Exit(combined_exit_code(codes))


def _load(source: str) -> Any:
    """load_results for a command: an unreachable location is one error line, exit 2."""
    from imgbench.results.location import ResultsLocationError
    from imgbench.results.store import load_results

    try:
        return load_results(source)
    except ResultsLocationError as exc:
        raise fail(str(exc)) from None


@results_app.command("list")
def results_list(
    results: Annotated[str, typer.Argument(help="folder, file or s3://BUCKET/PREFIX")] = "results",
) -> None:
    """One line per run found in the results folder (or bucket prefix)."""
    from imgbench.results.store import run_summary

    loaded = _load(results)
    for path, reason in loaded.skipped:
        err.print(f"[yellow]skipped {path}: {reason}[/]", highlight=False)
    summary = run_summary(loaded.frame)
    if summary.empty:
        console.print(f"no results in {results}; run `make bench` or `imgbench run`")
        return
    table = Table("created (UTC)", "host", "dataset", "ok", "skipped", "failed")
    table.add_column("run_id", no_wrap=True)
    for row in summary.itertuples():
        host = str(row.hostname)
        if isinstance(row.node_label, str) and row.node_label and row.node_label != host:
            host = f"{host} · {row.node_label}"
        table.add_row(
            f"{row.created_utc:%Y-%m-%d %H:%M}",
            host,
            str(row.dataset_name),
            str(row.ok),
            str(row.skipped),
            str(row.failed),
            str(row.run_id),
        )
    console.print(table)


@results_app.command("show")
def results_show(
    run_id: Annotated[str, typer.Argument(help="a run id (or a unique prefix), or a parquet file")],
    results: Annotated[str, typer.Option(help="results folder or s3://BUCKET/PREFIX")] = "results",
) -> None:
    """The cases of one run: throughput, spread, status."""
    is_file = run_id.endswith(".parquet") or Path(run_id).is_file()
    loaded = _load(run_id if is_file else results)
    frame = loaded.frame
    if not is_file:
        matches = sorted({r for r in frame["run_id"].dropna() if str(r).startswith(run_id)})
        if len(matches) != 1:
            found = "no run" if not matches else f"{len(matches)} runs"
            raise fail(f"{found} matching {run_id!r} in {results}")
        frame = frame[frame["run_id"] == matches[0]]
    import pandas as pd

    def known(value: object) -> bool:  # null columns read back as NaN, which is truthy
        return bool(pd.notna(value) and value)

    table = Table("case", "status", "images/s", "q1–q3", "MP/s", "p99 ms", "reason")
    for row in frame.itertuples():
        ok = row.status == "ok"
        table.add_row(
            str(row.case_id),
            str(row.status),
            f"{row.images_per_s_median:,.0f}" if ok else "",
            f"{row.images_per_s_q1:,.0f}–{row.images_per_s_q3:,.0f}" if ok else "",
            f"{row.megapixels_per_s_median:,.1f}"
            if ok and known(row.megapixels_per_s_median)
            else "",
            f"{row.latency_ms_p99:.2f}" if ok and known(row.latency_ms_p99) else "",
            str(row.reason) if known(row.reason) else "",
        )
    console.print(table)


@results_app.command("import")
def results_import(
    files: Annotated[list[Path], typer.Argument(help="pytest-benchmark JSON files")],
    results: Annotated[Path, typer.Option(help="results folder")] = Path("results"),
) -> None:
    """Turn pytest-benchmark JSON files into parquet runs."""
    from imgbench.results.pytest_json import JSONImportError, rows_from_json
    from imgbench.results.store import write_rows

    code = 0
    for path in files:
        try:
            rows = rows_from_json(path)
        except JSONImportError as exc:
            err.print(f"[red]error:[/] {exc}", highlight=False)
            code = 2
            continue
        if not rows:
            err.print(f"[yellow]{path}: no benchmarks in it[/]", highlight=False)
            continue
        target = results / f"{rows[0]['run_id']}.parquet"
        write_rows(rows, target)
        console.print(f"{path} -> {target} ({len(rows)} rows)", highlight=False)
    raise typer.Exit(code)


env_app = typer.Typer(
    help=(
        "Libraries of the matrix (version, licence), and the isolated environments "
        "(pillow-simd, tensorflow, mosaic, albumentationsx, mxnet)."
    ),
    invoke_without_command=True,
)
app.add_typer(env_app, name="env")


@env_app.command("create")
def env_create(
    name: Annotated[
        str, typer.Argument(help="pillow-simd | tensorflow | mosaic | albumentationsx | mxnet")
    ],
) -> None:
    """Build an isolated venv under .venvs/NAME with imgbench and that library, verified."""
    from imgbench.envs import EnvError, create_env

    try:
        path = create_env(name)
    except EnvError as exc:
        raise fail(str(exc)) from None
    console.print(f"environment {name} ready: {path}", highlight=False)


@env_app.callback()
def env(ctx: typer.Context) -> None:
    """Each library of the matrix: its installed version, or why it is unavailable."""
    if ctx.invoked_subcommand is not None:
        return
    from imgbench.libraries import library_statuses
    from imgbench.machine import machine_info

    info = machine_info()
    console.print(
        f"{info.hostname}: {info.cpu_model}, {info.cpu_cores_logical} logical cores, "
        f"{info.ram_bytes / 2**30:.1f} GiB, {info.os}, Python {info.python_version}",
        highlight=False,
    )
    table = Table("stage", "library", "version", "licence", "status")
    for status in library_statuses():
        table.add_row(
            status.stage,
            status.library,
            status.version or "",
            status.licence or "",
            "[green]available[/]" if status.available else f"[red]unavailable[/]: {status.reason}",
        )
    console.print(table)
    from imgbench.disks.disk import unavailable_reason

    disk = unavailable_reason()
    console.print(
        "emulated disks (--disk): "
        + ("[green]available[/]" if disk is None else f"[red]unavailable[/]: {disk}"),
        highlight=False,
    )


@app.command()
def dashboard(
    results: Annotated[str, typer.Option(help="results folder, or s3://BUCKET/PREFIX")] = "results",
    port: Annotated[int, typer.Option(help="port on 127.0.0.1")] = 8501,
) -> None:
    """Open the Streamlit dashboard on the results folder (or bucket prefix)."""
    from imgbench.paths import repo_root
    from imgbench.results.location import is_remote

    root = repo_root()
    app_file = root / "dashboard" / "app.py" if root else None
    if app_file is None or not app_file.is_file():
        raise fail("the dashboard is not built yet (issue: Streamlit dashboard)", code=1)
    where = results if is_remote(results) else str(Path(results).resolve())
    env_vars = {**os.environ, "IMGBENCH_RESULTS": where}
    cmd = [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(app_file),
        "--server.address=127.0.0.1",
        f"--server.port={port}",
        "--server.headless=true",
        "--browser.gatherUsageStats=false",
    ]
    # exec, not a child: a SIGTERM from a script or a service manager then reaches Streamlit itself
    # (a child server outlived its parent on the port for 41 minutes)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, cmd, env_vars)


def main() -> None:  # pragma: no cover
    app()


if __name__ == "__main__":  # pragma: no cover
    app()
