"""py-spy's sampler: the sampling phase starts when py-spy samples, and a failing py-spy says why."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from imgbench.profiling import stacks
from imgbench.profiling.stacks import StackSampler


def fake_py_spy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script: str) -> None:
    """A py-spy stand-in (a shell script) that the sampler will launch."""
    fake = tmp_path / "py-spy"
    fake.write_text(f"#!/bin/sh\n{script}\n")
    fake.chmod(0o755)
    monkeypatch.setattr(stacks, "py_spy", lambda: str(fake))


def spin(seconds: float) -> int:
    end, n = time.perf_counter() + seconds, 0
    while time.perf_counter() < end:
        n += 1
    return n


@pytest.mark.skipif(stacks.py_spy() is None, reason="py-spy is not installed")
def test_start_returns_once_py_spy_samples(tmp_path: Path) -> None:
    sampler = StackSampler(tmp_path / "stacks.json", rate=100)
    assert sampler.start(), sampler.error
    assert sampler.start_s is not None and sampler.start_s >= 0
    spin(0.5)
    found = sampler.stop()
    assert sampler.error is None
    spun = [s for s in found if any(f.name == "spin" for f in s.frames)]
    # 0.5 s at 100 Hz: 50 samples if py-spy sampled from the moment start() returned. A sampler
    # that was still attaching (the CI failure this guards) saw none of them.
    assert len(spun) >= 1 and sum(s.weight for s in spun) >= 0.2  # seconds sampled


def test_a_py_spy_that_fails_to_attach_names_its_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_py_spy(tmp_path, monkeypatch, "echo 'Error: Permission Denied (os error 13)'\nexit 1")
    sampler = StackSampler(tmp_path / "stacks.json")
    assert not sampler.start()
    assert sampler.error == "py-spy did not start sampling: Error: Permission Denied (os error 13)"


def test_a_py_spy_that_never_starts_times_out_and_is_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_py_spy(tmp_path, monkeypatch, "exec sleep 60")
    sampler = StackSampler(tmp_path / "stacks.json")
    begin = time.perf_counter()
    assert not sampler.start(ready_timeout_s=0.5)
    assert time.perf_counter() - begin < 20
    assert sampler.error == "py-spy did not start sampling within 0.5 s"
    assert sampler._process is None
