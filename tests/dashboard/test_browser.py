"""The dashboard in a real headless Chromium: every page renders its charts and no exception.

Starts ``streamlit run dashboard/app.py -- --results DIR`` on 127.0.0.1 with a free port, drives
Debian's Chromium (apt ``chromium``) through Playwright, and saves one screenshot per page under
tests/.artifacts/dashboard/ (git-ignored) for a person to look at.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.dashboard.fixtures import standard_runs, write_allocator_run, write_run

REPO = Path(__file__).resolve().parents[2]
APP = REPO / "dashboard" / "app.py"
CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = REPO / "tests" / ".artifacts" / "dashboard"
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


@contextlib.contextmanager
def serve(results: Path) -> Iterator[str]:
    """The dashboard as a user starts it; always terminated, even when the test fails."""
    port = _free_port()
    cmd = [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(APP),
        "--server.address=127.0.0.1",
        f"--server.port={port}",
        "--server.headless=true",
        "--browser.gatherUsageStats=false",
        "--",
        "--results",
        str(results),
    ]
    log = results.parent / "streamlit.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=out, stderr=subprocess.STDOUT)
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
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
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
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


def test_every_page_renders_in_chromium(tmp_path: Path, browser: Any) -> None:
    results = tmp_path / "results"
    results.mkdir()
    for spec in standard_runs():
        write_run(results, spec)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with serve(results) as url:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        try:
            for path, charts in PAGES.items():
                _visit(page, url, path, charts, path or "overview")
        finally:
            page.close()


def test_allocator_effect_renders_in_chromium(tmp_path: Path, browser: Any) -> None:
    """A run with allocator sessions: the pages draw one chart more (the allocator effect)."""
    results = tmp_path / "results"
    results.mkdir()
    write_allocator_run(results)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with serve(results) as url:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        try:
            for path, charts in ALLOCATOR_PAGES.items():
                _visit(page, url, path, charts, f"{path}-allocators")
        finally:
            page.close()
