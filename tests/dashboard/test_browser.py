"""What imgbench draws, in one real headless Chromium: every dashboard page renders its charts and
no exception, and `imgbench report`'s HTML file renders offline.

Starts the dashboard as a user does (``imgbench dashboard --port P --results DIR``, which execs
Streamlit on 127.0.0.1), drives Debian's Chromium (apt ``chromium``) through Playwright, saves one
screenshot per page under tests/.artifacts/ (git-ignored) for a person to look at, and ends each
server with SIGTERM as a script or a service manager does: the port must be free after it and no
Streamlit process left (tests/dashboard/test_dashboard_command.py checks that where Chromium is
missing). One browser for the module: a launch costs seconds on 2 busy cores.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from typer.testing import CliRunner

from imgbench.cli import app
from tests.dashboard.fixtures import standard_runs, write_allocator_run, write_run
from tests.dashboard.servers import stop_and_check_gone
from tests.shared_runs import SessionRun

REPO = Path(__file__).resolve().parents[2]
APP = REPO / "dashboard" / "app.py"
CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = REPO / "tests" / ".artifacts" / "dashboard"
REPORT_ARTIFACTS = REPO / "tests" / ".artifacts" / "report"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
# url path -> charts the page must draw on the fixture results
PAGES = {"": 2, "readers": 3, "augment": 2, "formats": 3, "loaders": 5, "compare": 1, "explorer": 0}
# Compare runs imgbench.compare's bootstrap on first view: as long as `imgbench compare`
# (10-20 s for the fixture's 68 cases on a busy 2-core machine), so it gets longer to draw
CHART_TIMEOUT_MS = {"compare": 120_000}
# the same with allocator sessions in the run: one chart more on these pages
ALLOCATOR_PAGES = {"readers": 4, "augment": 3, "loaders": 6}

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(), reason="needs Debian's Chromium: apt-get install -y chromium"
)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# `imgbench dashboard` as a script runs it: the CLI, which execs Streamlit in the same process
DASHBOARD_CLI = (
    "import sys; from imgbench.cli import app; "
    "sys.argv = ['imgbench', 'dashboard', '--port', sys.argv[1], '--results', sys.argv[2]]; "
    "app()"
)


@contextlib.contextmanager
def serve(results: Path) -> Iterator[str]:
    """The dashboard as a user starts it; ended with SIGTERM after the pages were checked (then
    the port is free and no Streamlit process is left), killed whatever happens."""
    port = _free_port()
    log = results.parent / "streamlit.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-c", DASHBOARD_CLI, str(port), str(results)],
            cwd=REPO,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as answer:
                    if answer.read() == b"ok":
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"streamlit did not start: {log.read_text(errors='replace')[-2000:]}")
            time.sleep(0.2)
        yield url
        # ended as a script or a service manager ends it: nothing may hold the port after it
        stop_and_check_gone(proc, port)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


def _visit(page: Any, url: str, path: str, charts: int, name: str) -> None:
    """Open a page, wait for its charts, save a full-page screenshot, check it drew them all."""
    page.set_viewport_size({"width": 1400, "height": 1000})
    page.goto(f"{url}/{path}", wait_until="domcontentloaded")
    page.wait_for_selector("h1", timeout=30_000)
    if charts:
        page.wait_for_function(
            "n => document.querySelectorAll("
            '\'[data-testid="stVegaLiteChart"] canvas, '
            '[data-testid="stVegaLiteChart"] svg.marks\').length >= n',
            arg=charts,
            timeout=CHART_TIMEOUT_MS.get(path, 30_000),
        )
    else:
        page.wait_for_selector("[data-testid='stDataFrame']", timeout=30_000)
    page.wait_for_timeout(500)  # let the last chart finish drawing
    height = page.evaluate(
        "document.querySelector('[data-testid=\"stMain\"]').scrollHeight"
    )  # the app scrolls inside stMain, so a full-page shot needs a tall viewport
    page.set_viewport_size({"width": 1400, "height": max(1000, int(height))})
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)
    assert page.locator("[data-testid='stException']").count() == 0, name
    drawn = page.locator("[data-testid='stVegaLiteChart']").count()
    assert drawn >= charts, f"{name}: {drawn} charts, expected {charts}"


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One headless Chromium (through Playwright) for the module's pages: a launch each cost
    seconds on 2 busy cores."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


def test_allocator_effect_and_profile_page_render_in_chromium(
    profile_results: Path, tmp_path: Path, browser: Any
) -> None:
    """A run with allocator sessions: the pages draw one chart more (the allocator effect). The
    same server shows the package's `imgbench profile` runs (tests/dashboard/conftest.py; first
    in the module, so they are made before the browser starts) on their page. A profile run is
    never preselected over a benchmark run (test_profile_page.py), so the stage pages still show
    the allocator run: one server start fewer than a folder each."""
    results = tmp_path / "results"
    results.mkdir()
    write_allocator_run(results)
    copied = []
    for path in profile_results.glob("*.parquet"):
        if set(pd.read_parquet(path, columns=["stage"])["stage"]) == {"profile"}:
            copied.append(shutil.copy(path, results / path.name))
    assert copied, list(profile_results.iterdir())
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with serve(results) as url:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        try:
            for path, charts in ALLOCATOR_PAGES.items():
                _visit(page, url, path, charts, f"{path}-allocators")
            _visit(page, url, "profile", 1, "profile")
            assert page.get_by_text("Where the time goes").count() == 1
        finally:
            page.close()


@pytest.fixture(scope="module")
def standard_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A baseline run and a 15% slower candidate (tests/dashboard/fixtures.py), every stage."""
    results = tmp_path_factory.mktemp("standard") / "results"
    results.mkdir()
    for spec in standard_runs():
        write_run(results, spec)
    return results


def test_every_page_renders_in_chromium(standard_folder: Path, browser: Any) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with serve(standard_folder) as url:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        try:
            for path, charts in PAGES.items():
                _visit(page, url, path, charts, path or "overview")
        finally:
            page.close()


def test_report_html_renders_offline_in_chromium(
    standard_folder: Path, tmp_path: Path, browser: Any
) -> None:
    """`imgbench report`'s file opens with every network request refused, draws its charts, and
    asks for nothing but itself."""
    target = tmp_path / "report.html"
    result = CliRunner().invoke(
        app, ["report", "--results", str(standard_folder), "--out", str(target)]
    )
    assert result.exit_code == 0, result.output
    html = target.read_text()
    assert not re.search(r"""(?:src|href)=["']?(?:https?:)?//""", html)
    requests: list[str] = []
    REPORT_ARTIFACTS.mkdir(parents=True, exist_ok=True)
    context = browser.new_context(offline=True, viewport={"width": 1300, "height": 900})
    try:
        page = context.new_page()

        def refuse(route: Any) -> None:
            requests.append(route.request.url)
            if route.request.url.startswith("file://"):
                route.continue_()
            else:
                route.abort()

        page.route("**/*", refuse)
        page.goto(target.as_uri(), wait_until="load")
        charts = page.locator("figure.chart svg")
        assert charts.count() == 2  # the configurations, and the recommended one's steps
        for index in range(charts.count()):
            box = charts.nth(index).bounding_box()
            assert box is not None and box["width"] > 200 and box["height"] > 50
            assert charts.nth(index).locator("path, rect").count() > 5  # marks drawn
        headline = page.locator(".headline").inner_text()
        assert headline.startswith("Use reader files")
        page.screenshot(path=str(REPORT_ARTIFACTS / "report.png"), full_page=True)
    finally:
        context.close()
    assert requests == [target.as_uri()]


def test_overview_in_chromium_on_real_rows(quick_session: SessionRun, browser: Any) -> None:
    """The Overview of a real run (the test session's quick run on real photos,
    tests/shared_runs.py), in Chromium: its first screen names a configuration that has an ok
    row, and nothing experimental is called best."""
    from imgbench.results.store import load_results

    assert quick_session.returncode == 0, quick_session.output
    frame = load_results(quick_session.results).frame
    ok = set(frame.loc[frame["status"] == "ok", "case_id"])
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with serve(quick_session.results) as url:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        try:
            page.goto(url, wait_until="domcontentloaded")
            page.wait_for_selector("[data-testid='stMetric']", timeout=60_000)
            page.wait_for_function(
                'document.querySelectorAll(\'[data-testid="stVegaLiteChart"] canvas, '
                '[data-testid="stVegaLiteChart"] svg.marks\').length >= 2',
                timeout=60_000,
            )
            text = page.locator("[data-testid='stMain']").inner_text()
            page.screenshot(path=str(ARTIFACTS / "overview-real-run.png"), full_page=True)
        finally:
            page.close()
    cited = [c for c in ok if f"{c} in run" in text]
    assert cited, text[:2000]
    headline = next(line for line in text.splitlines() if line.startswith("Use reader"))
    assert "experiment" not in headline and "tjbench" not in headline
    assert "Recommended, images/s" in text and "Bounded by" in text
