"""``imgbench verify readers``: every available reader on every image, one table per reader."""

from __future__ import annotations

from dataclasses import dataclass, field

from rich.console import Console
from rich.table import Table

from imgbench.readers.base import ReaderSpec
from imgbench.readers.registry import READERS, build_reader
from imgbench.errors import one_line
from imgbench.readers.verify import Verdict, tolerance, verify_item


class VerifyError(ValueError):
    """The verification cannot run at all (e.g. the dataset cannot be loaded)."""


@dataclass
class ReaderReport:
    spec: ReaderSpec
    status: str = "ran"  # ran | unavailable | elsewhere
    reason: str = ""
    verdicts: list[tuple[str, Verdict]] = field(default_factory=list)  # (codec, verdict)

    @property
    def failures(self) -> int:
        return sum(not v.ok for _, v in self.verdicts)


def _selected(spec: ReaderSpec, only: list[str]) -> bool:
    return not only or spec.library in only or f"{spec.library}/{spec.variant}" in only


def verify_reader(spec: ReaderSpec, images, reduce: int, environment: str) -> ReaderReport:  # type: ignore[no-untyped-def]
    """``images``: (codec, path, data, content key) tuples."""
    report = ReaderReport(spec)
    if spec.environment != environment:
        report.status, report.reason = (
            "elsewhere",
            f"run .venvs/{spec.environment}/bin/imgbench verify readers "
            f"(after imgbench env create {spec.environment})",
        )
        return report
    try:
        reader = build_reader(spec, reduce=reduce if spec.output != "full" else None)
    except Exception as exc:
        report.status, report.reason = "unavailable", one_line(exc)
        return report
    if spec.library == "pillow-simd":
        from imgbench.envs import pillow_simd_facts, pillow_simd_problem

        problem = pillow_simd_problem(pillow_simd_facts())
        if problem:
            report.status, report.reason = "unavailable", problem
            return report
    for codec, path, data, key in images:
        if codec not in spec.codecs:
            continue
        verdict = verify_item(
            reader.decode,  # type: ignore[attr-defined]
            data,
            path=path,
            data=data,
            key=key,
            codec=codec,
            output=spec.output,
            reduce=reduce,
        )
        report.verdicts.append((codec, verdict))
    return report


def run_verification(
    console: Console,
    *,
    dataset: str,
    max_images: int,
    only: list[str],
    reduce: int,
    show_all: bool,
) -> int:
    """Print the tables; returns the number of failed (reader, image) pairs."""
    from imgbench.datasets import DatasetError, load_dataset
    from imgbench.envs import current_environment

    try:
        ds = load_dataset(dataset)
    except DatasetError as exc:
        raise VerifyError(str(exc)) from None
    manifest = ds.manifest
    images = []
    per_codec: dict[str, int] = {}
    for entry in manifest.entries:
        if per_codec.get(entry.codec, 0) >= max_images:
            continue
        per_codec[entry.codec] = per_codec.get(entry.codec, 0) + 1
        path = manifest.root / entry.path
        images.append((entry.codec, entry.path, path.read_bytes(), entry.sha256))
    specs = [s for s in READERS if _selected(s, only)]
    if not specs:
        raise VerifyError(f"no reader matches {', '.join(only)}")
    environment = current_environment()
    console.print(
        f"dataset {ds.name}: {len(images)} images "
        f"({', '.join(f'{n} {c}' for c, n in per_codec.items())}); environment {environment}; "
        f"tolerance (mean abs error vs Pillow reference): lossless {tolerance('png', 'full'):g}, "
        f"JPEG/WebP {tolerance('jpeg', 'full'):g}, reduced 1/{reduce} {tolerance('jpeg', 'reduced'):g}",
        highlight=False,
    )
    reports = [verify_reader(spec, images, reduce, environment) for spec in specs]
    for report in reports:
        if report.status == "ran" and (report.failures or show_all) and report.verdicts:
            console.print(_reader_table(report, show_all))
    console.print(_summary_table(reports))
    return sum(r.failures for r in reports)


def _name(spec: ReaderSpec) -> str:
    return f"{spec.library}/{spec.variant}"


def _reader_table(report: ReaderReport, show_all: bool) -> Table:
    passed = len(report.verdicts) - report.failures
    table = Table(title=f"{_name(report.spec)}: {passed} of {len(report.verdicts)} pass")
    table.add_column("image", no_wrap=True)
    table.add_column("codec", no_wrap=True)
    table.add_column("result")
    table.add_column("MAE", justify="right", no_wrap=True)
    for codec, verdict in report.verdicts:
        if verdict.ok and not show_all:
            continue
        table.add_row(
            verdict.path,
            codec,
            "[green]pass[/]" if verdict.ok else f"[red]{verdict.detail}[/]",
            "" if verdict.mae is None else f"{verdict.mae:.2f}",
        )
    return table


def _summary_table(reports: list[ReaderReport]) -> Table:
    table = Table(title="readers")
    table.add_column("reader", no_wrap=True)
    for name in ("images", "pass", "fail", "max MAE"):
        table.add_column(name, justify="right", no_wrap=True)
    table.add_column("status")
    for report in reports:
        maes = [v.mae for _, v in report.verdicts if v.ok and v.mae is not None]
        if report.status != "ran":
            status = f"[yellow]{report.status}[/]: {report.reason}"
        elif not report.verdicts:
            status = "[yellow]no images of its codecs[/]"
        else:
            status = "[green]pass[/]" if not report.failures else "[red]fail[/]"
        table.add_row(
            _name(report.spec),
            str(len(report.verdicts)),
            str(len(report.verdicts) - report.failures),
            str(report.failures),
            f"{max(maes):.2f}" if maes else "",
            status,
        )
    return table
