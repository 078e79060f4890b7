"""Screenshots of the dashboard's pages and of `imgbench report`, on a results folder, in Chromium.

    .venv/bin/python scripts/screenshots.py --results results --out /tmp/imgbench-shots

starts `imgbench dashboard` on a free port (stopped afterwards), opens each page in Debian's
Chromium through Playwright, waits for its charts, and saves a full-page PNG; then writes
`imgbench report` for the same folder and saves it too, opened from the file with the network off.
What a person looks at before saying what the dashboard shows (issue 17's closing notes).
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
PAGES = {"overview": "", "loaders": "loaders", "readers": "readers"}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait(url: str, process: subprocess.Popen[bytes], seconds: float = 90) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), urllib.request.urlopen(url, timeout=2) as answer:
            if answer.status == 200:
                return
        if process.poll() is not None:
            raise SystemExit(f"the dashboard exited with {process.returncode}")
        time.sleep(0.5)
    raise SystemExit(f"the dashboard did not answer within {seconds:g} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=Path("results"))
    parser.add_argument("--out", type=Path, default=Path("/tmp/imgbench-shots"))
    parser.add_argument("--settle-s", type=float, default=20.0, help="time for a page's charts")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    args.out.mkdir(parents=True, exist_ok=True)
    imgbench = str(Path(sys.executable).parent / "imgbench")
    report = args.out / "report.html"
    subprocess.run(
        [imgbench, "report", "--results", str(args.results), "--out", str(report)], check=True
    )
    port = _free_port()
    dashboard = subprocess.Popen(
        [imgbench, "dashboard", "--results", str(args.results), "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait(f"http://127.0.0.1:{port}/_stcore/health", dashboard)
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"]
            )
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            for name, path in PAGES.items():
                page.goto(f"http://127.0.0.1:{port}/{path}", wait_until="networkidle")
                time.sleep(args.settle_s)
                page.screenshot(path=str(args.out / f"{name}.png"), full_page=True)
                print(args.out / f"{name}.png")
            offline = browser.new_context(offline=True).new_page()
            offline.goto(report.resolve().as_uri())
            time.sleep(2)
            offline.screenshot(path=str(args.out / "report.png"), full_page=True)
            print(args.out / "report.png")
            browser.close()
    finally:
        dashboard.send_signal(signal.SIGTERM)
        dashboard.wait(timeout=30)


if __name__ == "__main__":
    main()
