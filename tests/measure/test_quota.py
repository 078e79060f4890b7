"""A cgroup CPU quota: read, watched, and the rounds it throttles stretched over its periods."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from imgbench.measure import rounds
from imgbench.measure.case import Workload
from imgbench.measure.host import HostGate, probe_s
from imgbench.measure.quota import (
    ROUND_PERIODS,
    CpuQuota,
    QuotaGroup,
    Throttling,
    cpu_quota,
    quota_group,
    v1_quota,
    v2_quota,
)
from imgbench.measure.settings import Settings


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"cpu.cfs_quota_us": "100000", "cpu.cfs_period_us": "100000"}, (1.0, 0.1)),
        ({"cpu.cfs_quota_us": "15000", "cpu.cfs_period_us": "10000"}, (1.5, 0.01)),
        ({"cpu.cfs_quota_us": "-1", "cpu.cfs_period_us": "100000"}, None),
        ({}, None),
    ],
)
def test_a_v1_quota_is_read_in_cpus_per_period(
    tmp_path: Path, files: dict, expected: tuple[float, float] | None
) -> None:
    group = tmp_path / "imgbench-check"
    group.mkdir()
    for name, text in files.items():
        (group / name).write_text(text + "\n")
    found = v1_quota("/imgbench-check", (tmp_path,))
    assert (found and (found.cpus, found.period_s)) == (expected or None)
    if found is not None:
        assert found.folder == group


def test_a_v2_quota_is_read_in_cpus_per_period(tmp_path: Path) -> None:
    (tmp_path / "box").mkdir()
    (tmp_path / "box" / "cpu.max").write_text("50000 100000\n")
    assert v2_quota(tmp_path, "/box") == CpuQuota(0.5, 0.1, tmp_path / "box")
    (tmp_path / "box" / "cpu.max").write_text("max 100000\n")
    assert v2_quota(tmp_path, "/box") is None


def test_the_process_cgroup_file_leads_to_its_quota(tmp_path: Path) -> None:
    (tmp_path / "box").mkdir()
    (tmp_path / "box" / "cpu.max").write_text("200000 100000\n")
    proc = tmp_path / "cgroup"
    proc.write_text("0::/box\n")
    found = cpu_quota(proc, v2_root=tmp_path, v1_mounts=())
    assert found is not None and found.cpus == 2.0
    proc.write_text("garbage\n")
    assert cpu_quota(proc, v2_root=tmp_path, v1_mounts=()) is None


@pytest.mark.parametrize(
    ("text", "waited_s"),
    [
        ("nr_periods 10\nnr_throttled 4\nthrottled_time 250000000\n", 0.25),  # v1, ns
        ("usage_usec 1\nnr_periods 10\nnr_throttled 4\nthrottled_usec 250000\n", 0.25),  # v2
    ],
)
def test_the_throttling_counters_are_read_and_differenced(
    tmp_path: Path, text: str, waited_s: float
) -> None:
    (tmp_path / "cpu.stat").write_text(text)
    counters = CpuQuota(1.0, 0.1, tmp_path).throttling()
    assert counters == Throttling(10, 4, waited_s)
    assert counters.since(Throttling(2, 0, 0.05)) == Throttling(8, 4, pytest.approx(0.2))
    assert counters.since(Throttling(2, 0, 0.0)).share == 0.5
    assert Throttling(0, 0, 0.0).share is None
    assert CpuQuota(1.0, 0.1, tmp_path / "missing").throttling() is None


class FakeCgroup:
    """A quota whose ``cpu.stat`` the workload writes: each item it processes adds ``wait_s`` of
    throttling, as a case that overdraws the quota would."""

    def __init__(self, folder: Path, wait_s: float, period_s: float = 0.005) -> None:
        self.quota = CpuQuota(0.5, period_s, folder)
        self.stat = folder / "cpu.stat"
        self.wait_s = wait_s
        self.periods = self.throttled = 0
        self.waited_s = 0.0
        self._write()

    def _write(self) -> None:
        self.stat.write_text(
            f"nr_periods {self.periods}\nnr_throttled {self.throttled}\n"
            f"throttled_time {int(self.waited_s * 1e9)}\n"
        )

    def work(self, _item: object) -> None:
        self.periods += 1
        self.throttled += self.wait_s > 0
        self.waited_s += self.wait_s
        self._write()


@pytest.mark.parametrize("wait_s", [0.01, 0.0])
def test_rounds_of_a_throttled_case_span_ten_periods_and_say_how_often(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, wait_s: float
) -> None:
    cgroup = FakeCgroup(tmp_path, wait_s)
    monkeypatch.setattr(rounds, "cpu_quota", lambda: cgroup.quota)
    workload = Workload(items=list(range(4)), fn=cgroup.work)
    settings = Settings(rounds=3, warmup_rounds=1, min_round_s=0.0, host_max_ratio=0)
    measured = rounds.time_workload(workload, settings, HostGate(max_ratio=0))
    columns = measured.metrics() | measured.columns
    assert columns["cpu_quota"] == 0.5 and columns["cpu_quota_period_ms"] == 5.0
    if wait_s:  # throttled in its warm-up: rounds of ten periods, every period throttled
        assert measured.min_round_s == ROUND_PERIODS * 0.005
        # calibrated to it: a pass of four items lasts well under a millisecond here, so a round
        # repeats them many times (how long each timed round then lasts is the host's business)
        assert measured.round_repeats >= 10
        assert columns["cpu_throttled_share"] == 1.0
    else:  # never held back: the profile's rounds, a share of 0
        assert measured.min_round_s == 0.0 and measured.round_repeats == 1
        assert columns["cpu_throttled_share"] == 0.0


def test_without_a_quota_rows_carry_no_quota_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rounds, "cpu_quota", lambda: None)
    workload = Workload(items=[0, 1], fn=lambda _: None)
    settings = Settings(rounds=2, warmup_rounds=1, min_round_s=0.0, host_max_ratio=0)
    measured = rounds.time_workload(workload, settings, HostGate(max_ratio=0))
    assert "cpu_quota" not in measured.columns and measured.min_round_s == 0.0


def _quota_controller() -> str | None:
    """Why a real quota cgroup cannot be made here, or None."""
    if os.geteuid() != 0:
        return "needs root (it creates a cgroup)"
    try:
        QuotaGroup("imgbench-quota-probe", 1.0)
    except OSError as exc:
        return str(exc)
    return None


needs_cgroup = pytest.mark.skipif(_quota_controller() is not None, reason=str(_quota_controller()))

# one Python thread spinning under half a CPU, 20 ms periods: it is held back about half the time
INSIDE = textwrap.dedent(
    """
    import json, time
    from imgbench.measure import rounds
    from imgbench.measure.case import Workload
    from imgbench.measure.host import HostGate, probe_s
    from imgbench.measure.settings import Settings

    def spin(_):
        end = time.thread_time() + 0.002
        while time.thread_time() < end:
            pass

    probes = [probe_s() for _ in range(300)]
    settings = Settings(rounds=3, warmup_rounds=1, min_round_s=0.0, host_max_ratio=0)
    measured = rounds.time_workload(
        Workload(items=list(range(4)), fn=spin), settings, HostGate(max_ratio=0)
    )
    print(json.dumps({"probes": probes, "samples": measured.samples_s,
                      "min_round_s": measured.min_round_s, **measured.columns}))
    """
)


@needs_cgroup
def test_under_a_real_quota_the_rounds_stretch_and_the_probe_sees_no_throttling() -> None:
    with quota_group(0.5, period_us=20_000) as group:
        found = subprocess.run(
            [sys.executable, "-c", INSIDE],
            preexec_fn=group.enter,
            capture_output=True,
            text=True,
            check=True,
        )
        assert group.path.exists()
    assert not group.path.exists()  # removed on the way out
    row = json.loads(found.stdout)
    assert row["cpu_quota"] == 0.5 and row["cpu_quota_period_ms"] == 20.0
    assert row["min_round_s"] == pytest.approx(ROUND_PERIODS * 0.02)
    assert row["cpu_throttled_share"] > 0.3
    # the probe times CPU, not the wait for the next period: timed with perf_counter, its
    # slowest here was a 13 ms throttled stretch, 16x its median
    assert max(row["probes"]) < 5 * statistics.median(row["probes"])
    assert probe_s() > 0
