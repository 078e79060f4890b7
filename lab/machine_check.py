"""Does the machine reference explain a slower machine? The check of "Runs from two machines"
(docs/regression.md): two runs of the same commit on this machine, the second with its whole
process tree under a cgroup CPU quota (another "machine": the same cores, less CPU time), then
``imgbench compare`` on the two folders and the answer's pick's figures.

Root only (it creates a cgroup); one run at a time, on a quiet machine, from the repository root:

    sudo .venv/bin/python lab/machine_check.py --results /tmp/machine-check
    sudo .venv/bin/python lab/machine_check.py --results /tmp/machine-check --quota-cpus 1.5
    sudo .venv/bin/python lab/machine_check.py --results /tmp/machine-check --compare-only
    sudo .venv/bin/python lab/machine_check.py --self-test     # the cgroup alone, no timing

docs/regression.md's table ran the quick profile's final at 5 blocks of 3 rounds, a steadier pick:
``printf '[tool.imgbench.profiles.quick.final]\nblocks = 5\nrounds = 3\n' > /tmp/q.toml`` and
``IMGBENCH_PYPROJECT=/tmp/q.toml`` before the command.

It runs ``imgbench run --profile quick --results RESULTS/full`` as is, then the same into
``RESULTS/quota`` inside the cgroup ``imgbench-machine-check-PID`` (v1:
``/sys/fs/cgroup/cpu/NAME``, ``cpu.cfs_quota_us`` = quota x ``cpu.cfs_period_us``; v2:
``cpu.max``), which it always removes afterwards (any process left in it is moved out first).
Then ``imgbench compare RESULTS/full RESULTS/quota --machines --json RESULTS/compare.json`` and,
from its JSON, the pick's measured ratio (quota / full, images/s), the reference's predicted
ratio and the error (predicted / measured - 1). More ``imgbench run`` arguments go after ``--``.

Exit status 1 when the pick's |error| is over ``--tolerance`` (10%), 2 when there is no pick or
no prediction to check.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

V1_CPU = Path("/sys/fs/cgroup/cpu")
V2_ROOT = Path("/sys/fs/cgroup")


class Quota:
    """A cgroup with a CPU quota: v1's cpu controller where it is mounted, else v2's cpu.max."""

    def __init__(self, name: str, cpus: float, period_us: int) -> None:
        self.v1 = (V1_CPU / "cpu.cfs_quota_us").exists()
        if not self.v1 and "cpu" not in _read(V2_ROOT / "cgroup.controllers").split():
            raise SystemExit("no cgroup cpu controller here (v1 or v2)")
        self.parent = V1_CPU if self.v1 else V2_ROOT
        self.path = self.parent / name
        self.cpus, self.period_us = cpus, period_us

    def create(self) -> None:
        self.path.mkdir()
        quota = int(self.cpus * self.period_us)
        if self.v1:
            (self.path / "cpu.cfs_period_us").write_text(f"{self.period_us}\n")
            (self.path / "cpu.cfs_quota_us").write_text(f"{quota}\n")
        else:
            (self.path / "cpu.max").write_text(f"{quota} {self.period_us}\n")

    def enter(self) -> None:
        """Move the calling process (a child between fork and exec) into the cgroup: every
        process it starts is then inside too."""
        (self.path / "cgroup.procs").write_text(f"{os.getpid()}\n")

    def remove(self) -> None:
        """Empty the cgroup (anything left is moved to its parent) and remove it."""
        if not self.path.exists():
            return
        for _ in range(50):
            left = _read(self.path / "cgroup.procs").split()
            for pid in left:
                with contextlib.suppress(OSError):
                    (self.parent / "cgroup.procs").write_text(f"{pid}\n")
            try:
                self.path.rmdir()
                return
            except OSError:
                time.sleep(0.1)
        print(f"warning: could not remove {self.path}; remove it by hand (rmdir)", file=sys.stderr)

    def throttled_s(self) -> float | None:
        """Seconds the cgroup's processes waited for quota (v1 cpu.stat throttled_time, ns)."""
        for line in _read(self.path / "cpu.stat").splitlines():
            key, _, value = line.partition(" ")
            if key == "throttled_time":
                return int(value) / 1e9
            if key == "throttled_usec":
                return int(value) / 1e6
        return None


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


@contextlib.contextmanager
def quota_group(cpus: float, period_us: int) -> Iterator[Quota]:
    group = Quota(f"imgbench-machine-check-{os.getpid()}", cpus, period_us)
    group.create()
    try:
        yield group
    finally:
        group.remove()


def run(args: list[str], group: Quota | None = None) -> int:
    print("$ " + " ".join(args) + (f"   (in {group.path})" if group else ""), flush=True)
    started = time.monotonic()
    code = subprocess.call(args, preexec_fn=group.enter if group else None)
    print(f"exit {code} after {(time.monotonic() - started) / 60:.1f} min", flush=True)
    return code


PROBE = (
    "from pathlib import Path; from imgbench.measure.reference import cpu_quota, usable_cpus; "
    "print(Path('/proc/self/cgroup').read_text().strip().replace(chr(10), ' ')); "
    "print(cpu_quota(), usable_cpus())"
)


def self_test(cpus: float, period_us: int) -> int:
    """The cgroup made, a trivial process inside it (what the machine reference reads of its
    quota), the cgroup gone: no timing."""
    with quota_group(cpus, period_us) as group:
        membership, quota = subprocess.run(
            [sys.executable, "-c", PROBE],
            preexec_fn=group.enter,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.splitlines()
        inside = group.path.name in membership
        print(f"{group.path}: created, quota {cpus:g} CPU; a process inside it: {inside}")
        print(f"the reference reads there: quota {quota.split()[0]} CPU, {quota.split()[1]} cores")
    print(f"{group.path}: removed: {not group.path.exists()}")
    return 0 if inside and not group.path.exists() else 1


def check(results: Path, tolerance: float, imgbench: str) -> int:
    report = results / "compare.json"
    code = run(
        [
            imgbench,
            "compare",
            str(results / "full"),
            str(results / "quota"),
            "--machines",
            "--json",
            str(report),
        ]
    )
    if code not in (0, 1):  # 1: the quota run is slower, a "regression"; 2: unusable input
        return 2
    machines = json.loads(report.read_text()).get("machines") or {}
    pick = machines.get("pick")
    for line in machines.get("notes", []):
        print(f"note: {line}")
    if not pick or pick.get("predicted") is None:
        print("no pick with a reference prediction to check (see the compare output above)")
        return 2
    error = pick["explained"] - 1
    print(
        f"the answer's pick {pick['case_id']}: {pick['baseline']:,.0f} -> {pick['candidate']:,.0f} "
        f"images/s at {pick['parallel']} parallel; measured ratio {pick['ratio']:.3f}, "
        f"predicted {pick['predicted']:.3f}, error {error:+.1%} (tolerance {tolerance:.0%})"
    )
    median = machines.get("median_abs_error")
    if median is not None:
        print(f"median |error| over {len(machines.get('rows', []))} configurations: {median:.1%}")
    return 0 if abs(error) <= tolerance else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", type=Path, default=Path("/tmp/machine-check"))
    parser.add_argument("--profile", default="quick")
    parser.add_argument("--quota-cpus", type=float, default=1.0, help="CPUs the quota allows")
    parser.add_argument("--period-us", type=int, default=100_000)
    parser.add_argument("--tolerance", type=float, default=0.10)
    parser.add_argument("--imgbench", default=str(Path(sys.executable).with_name("imgbench")))
    parser.add_argument("--compare-only", action="store_true", help="reuse RESULTS/full, /quota")
    parser.add_argument("--self-test", action="store_true", help="the cgroup alone, no runs")
    parser.add_argument("run_args", nargs="*", help="more `imgbench run` arguments, after --")
    args = parser.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("run as root: it creates a cgroup")
    if args.self_test:
        return self_test(args.quota_cpus, args.period_us)
    if not args.compare_only:
        for name in ("full", "quota"):
            if (args.results / name).exists() and any((args.results / name).iterdir()):
                raise SystemExit(f"{args.results / name} is not empty: remove it or --compare-only")
        base = [args.imgbench, "run", "--profile", args.profile, *args.run_args]
        run([*base, "--name", "full", "--results", str(args.results / "full")])
        with quota_group(args.quota_cpus, args.period_us) as group:
            run([*base, "--name", "quota", "--results", str(args.results / "quota")], group)
            waited = group.throttled_s()
            if waited is not None:
                print(f"the quota held the run back {waited:,.0f} s in all", flush=True)
    return check(args.results, args.tolerance, args.imgbench)


if __name__ == "__main__":
    sys.exit(main())
