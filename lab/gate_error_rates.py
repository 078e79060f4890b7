"""The instruction gate's error rates, end to end with `imgbench ci` on two real commits.

    .venv/bin/python lab/gate_error_rates.py --fractions 0.10 --trials 1 --profile quick

makes a throw-away clone of this checkout, commits the test-only knob (``knob.BUILTIN``) so that
one case does FRACTION more real work, and runs ``imgbench ci --measure instructions`` for
A/A' (the base commit against itself, from two checkouts) and A/B (base against the knob commit).
It prints, per trial: the exit code, the injected case's instruction ratio, the largest change of
any other case, and the wall time of the whole `imgbench ci`. Runs are logged in lab/journal.md
on the results branch; the error rates they support are in docs/regression.md.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GIT = ["git", "-c", "user.email=gate@example.com", "-c", "user.name=gate"]


def _clone(into: Path) -> Path:
    repo = into / "repo"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(repo)], check=True)
    return repo


def _commit_knob(repo: Path, setting: str) -> str:
    knob = repo / "src/imgbench/measure/knob.py"
    text = knob.read_text()
    start = text.index('BUILTIN = "')
    end = text.index('"', start + len('BUILTIN = "')) + 1
    knob.write_text(text[:start] + f'BUILTIN = "{setting}"' + text[end:])
    subprocess.run([*GIT, "commit", "-qam", f"knob {setting}"], cwd=repo, check=True)
    return subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=repo, check=True, capture_output=True, text=True
    ).stdout.strip()


def _ci(repo: Path, base: str, head: str, profile: str, work: Path) -> tuple[int, dict, float]:
    start = time.perf_counter()
    report = work / "report.json"
    code = subprocess.call(
        [
            str(Path(sys.executable).parent / "imgbench"),
            "ci",
            f"--base={base}",
            f"--head={head}",
            f"--repo={repo}",
            f"--profile={profile}",
            "--measure=instructions",
            f"--json={report}",
            f"--workdir={work}",
        ],
        stdout=subprocess.DEVNULL,
    )
    return (
        code,
        json.loads(report.read_text()) if report.exists() else {},
        time.perf_counter() - start,
    )


def _ratios(report: dict) -> dict[str, float]:
    rows = report.get("rows") or []
    return {r["case_id"]: r["ratio"] for r in rows if r.get("metric") == "instructions_per_image"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fractions", type=float, nargs="+", default=[0.10])
    parser.add_argument("--trials", type=int, default=1)
    parser.add_argument("--profile", default="quick")
    parser.add_argument("--case", default="read/pillow/open-convert[codec=jpeg*")
    parser.add_argument("--skip-aa", action="store_true")
    parser.add_argument("--keep", type=Path, help="copy each trial's JSON report into this folder")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="imgbench-gate-") as tmp:
        repo = _clone(Path(tmp))
        base = "HEAD"
        base_sha = subprocess.run(
            ["git", "rev-parse", base], cwd=repo, check=True, capture_output=True, text=True
        ).stdout.strip()
        heads = [] if args.skip_aa else [("A/A'", base_sha)]
        for fraction in args.fractions:
            subprocess.run(["git", "checkout", "-q", base_sha], cwd=repo, check=True)
            sha = _commit_knob(repo, f"{args.case}={fraction}")
            heads.append((f"A/B +{fraction:.0%}", sha))
        print(f"{'trial':<14} {'exit':>4} {'injected':>9} {'others max':>10} {'minutes':>7}")
        for trial in range(args.trials):  # A/A' and A/B alternate: a slow hour lands on both
            for label, head in heads:
                work = Path(tmp) / f"work-{label.replace('/', '').replace(' ', '')}-{trial}"
                code, report, seconds = _ci(repo, base_sha, head, args.profile, work)
                ratios = _ratios(report)
                injected = [r for c, r in ratios.items() if fnmatch.fnmatchcase(c, args.case)]
                others = {
                    c: abs(r - 1)
                    for c, r in ratios.items()
                    if not fnmatch.fnmatchcase(c, args.case)
                }
                worst = max(others, key=lambda c: others[c], default="")
                print(
                    f"{label:<14} {code:>4} {max(injected, default=float('nan')):>9.4f} "
                    f"{max(others.values(), default=float('nan')):>10.4%} {seconds / 60:>7.1f}"
                    f"  {worst}",
                    flush=True,
                )
                if args.keep is not None and (work / "report.json").exists():
                    args.keep.mkdir(parents=True, exist_ok=True)
                    name = f"{label.replace('/', '').replace(' ', '').replace('+', '')}-{trial}"
                    shutil.copy(work / "report.json", args.keep / f"{name}.json")
                shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
