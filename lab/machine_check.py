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
``RESULTS/quota`` inside the cgroup ``imgbench-quota-PID`` (v1:
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
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from imgbench.measure.quota import CpuQuota, QuotaGroup, quota_group


def run(args: list[str], group: QuotaGroup | None = None) -> int:
    print("$ " + " ".join(args) + (f"   (in {group.path})" if group else ""), flush=True)
    started = time.monotonic()
    code = subprocess.call(args, preexec_fn=group.enter if group else None)
    print(f"exit {code} after {(time.monotonic() - started) / 60:.1f} min", flush=True)
    return code


PROBE = (
    "from pathlib import Path; from imgbench.measure.quota import cpu_quota; "
    "from imgbench.measure.reference import usable_cpus; "
    "print(Path('/proc/self/cgroup').read_text().strip().replace(chr(10), ' ')); "
    "found = cpu_quota(); print(found and found.cpus, usable_cpus())"
)


def throttled_s(group: QuotaGroup) -> float | None:
    """Seconds the group's processes waited for quota (cpu.stat), or None."""
    counters = CpuQuota(group.cpus, group.period_us / 1e6, group.path).throttling()
    return counters.waited_s if counters is not None else None


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
            waited = throttled_s(group)
            if waited is not None:
                print(f"the quota held the run back {waited:,.0f} s in all", flush=True)
    return check(args.results, args.tolerance, args.imgbench)


if __name__ == "__main__":
    sys.exit(main())
