"""The GitHub workflows: one job runs ``make test`` on every push and pull request."""

from pathlib import Path
from typing import Any

import pytest

yaml = pytest.importorskip("yaml")

WORKFLOWS = Path(__file__).resolve().parents[1] / ".github" / "workflows"


def _load(path: Path) -> dict[Any, Any]:
    doc = yaml.safe_load(path.read_text())
    assert isinstance(doc, dict), f"{path.name} is not a YAML mapping"
    return doc


def _events(doc: dict[Any, Any]) -> set[str]:
    """The workflow's triggers; YAML 1.1 (PyYAML) reads the key ``on`` as True."""
    on = doc["on"] if "on" in doc else doc.get(True)
    if isinstance(on, str):
        return {on}
    return set(on or ())


def _runs_make_test(job: dict[str, Any]) -> bool:
    for step in job.get("steps") or []:
        for line in str(step.get("run", "")).splitlines():
            if line.split("#")[0].split()[:2] == ["make", "test"]:
                return True
    return False


def _python_version(job: dict[str, Any]) -> str | None:
    container = job.get("container")
    image = container.get("image") if isinstance(container, dict) else container
    if isinstance(image, str) and image.startswith("python:"):
        return image.removeprefix("python:").split("-")[0]
    for step in job.get("steps") or []:
        if str(step.get("uses", "")).startswith("actions/setup-python"):
            return str((step.get("with") or {}).get("python-version"))
    return None


def _make_test_jobs() -> list[tuple[str, dict[Any, Any], dict[str, Any]]]:
    found = []
    for path in sorted([*WORKFLOWS.glob("*.yml"), *WORKFLOWS.glob("*.yaml")]):
        doc = _load(path)
        for name, job in (doc.get("jobs") or {}).items():
            if _runs_make_test(job):
                found.append((f"{path.name}:{name}", doc, job))
    return found


def test_workflows_parse() -> None:
    paths = [*WORKFLOWS.glob("*.yml"), *WORKFLOWS.glob("*.yaml")]
    assert paths
    for path in paths:
        assert _load(path).get("jobs"), f"{path.name} has no jobs"


def test_a_job_runs_make_test_on_push_and_pull_request() -> None:
    jobs = _make_test_jobs()
    assert jobs, "no workflow job runs `make test`"
    on_both = [name for name, doc, _ in jobs if {"push", "pull_request"} <= _events(doc)]
    assert on_both, f"jobs running make test ({[n for n, _, _ in jobs]}) miss push or pull_request"


def test_make_test_runs_on_debian_or_ubuntu_with_python_311() -> None:
    for name, _, job in _make_test_jobs():
        assert "ubuntu" in str(job.get("runs-on")), f"{name}: not on an Ubuntu runner"
        assert _python_version(job) == "3.11", f"{name}: not Python 3.11"


def test_the_regression_workflow_gates_on_counts_and_writes_the_answer() -> None:
    """imgbench ci with instruction counts deciding, its Markdown and the report's answer in the
    job summary."""
    doc = _load(WORKFLOWS / "imgbench.yml")
    runs = [
        str(step.get("run", "")) for job in doc["jobs"].values() for step in job.get("steps", [])
    ]
    ci = [r for r in runs if "imgbench ci" in r]
    assert ci and "--measure both" in ci[0] and "--workdir imgbench-work" in ci[0]
    assert any("imgbench-report.md" in r and "GITHUB_STEP_SUMMARY" in r for r in runs)
    answer = [r for r in runs if "imgbench report" in r]
    assert answer and "--markdown" in answer[0] and "imgbench-work/results-head" in answer[0]
