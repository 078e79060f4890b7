"""Instruction counts under callgrind: parsed, pinned, and counted without the collector.

That counts repeat across processes and that the gate names a case doing 25% more work is
checked on one A/B pair of counted sessions, in tests/compare/test_ci.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from imgbench.measure.case import Case, Workload
from imgbench.measure.instructions import parse_dump, unsupported, valgrind_missing
from imgbench.measure.knob import extra_work_for, with_extra_work
from imgbench.stages import get_stage, stamped

ROOT = Path(__file__).resolve().parents[2]

DUMP = """# callgrind format
version: 1
creator: callgrind-3.19.0
pid: 7688
cmd:  python t2.py
part: 1
desc: Trigger: Client Request: read/pillow/x
events: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw
summary: 0
totals: 57485 20000 10000 30 40 50 5 6 7
fl= (1)
"""


def _case(stage: str = "read", threads: int | None = 1, **params: object) -> Case:
    return Case(
        stage=stage,
        library="x",
        variant="y",
        prepare=lambda ctx, case: Workload(items=[1], fn=lambda _: None),
        params={"threads": threads, **params},
    )


def test_a_dump_gives_instructions_and_the_cycle_estimate(tmp_path: Path) -> None:
    path = tmp_path / "callgrind.7688.1"
    path.write_text(DUMP)
    counts = parse_dump(path)
    assert counts.instructions == 57485
    assert counts.estimated_cycles == 57485 + 10 * (30 + 40 + 50) + 100 * (5 + 6 + 7)
    ir_only = DUMP.replace("events: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw", "events: Ir")
    path.write_text(ir_only.replace("totals: 57485 20000 10000 30 40 50 5 6 7", "totals: 57485"))
    assert parse_dump(path).estimated_cycles is None
    path.write_text("not a dump\n")
    with pytest.raises(RuntimeError, match="not a callgrind dump"):
        parse_dump(path)


def test_cases_whose_work_is_not_their_instructions_say_why() -> None:
    assert unsupported(_case(mode="memory")) is None
    # the registry stamps the loader stage's reason on its cases (the engine knows no stage)
    loader = stamped(get_stage("loader"), _case(stage="loader"))
    assert "loaders" in (unsupported(loader) or "")
    assert "threads" in (unsupported(_case(threads=None, mode="memory")) or "")
    assert "disk" in (unsupported(_case(mode="disk")) or "")
    assert "disk" in (unsupported(_case(cache_state="cold")) or "")
    assert "writes" in (unsupported(_case(threads=None, mode="write")) or "")
    from dataclasses import replace

    s3 = replace(_case(mode="read"), services=("s3",))
    assert "session service (s3) over the network" in (unsupported(s3) or "")


def test_the_knob_adds_the_fraction_of_real_calls() -> None:
    assert extra_work_for("read/pillow/open[a]", "read/pillow/*=0.25") == 0.25
    assert extra_work_for("read/opencv/x", "read/pillow/*=0.25") == 0.0
    assert extra_work_for("read/opencv/x", "") == 0.0
    calls: list[int] = []
    heavier = with_extra_work(calls.append, 0.25)
    for i in range(8):
        heavier(i)
    assert len(calls) == 10  # 8 items + 2 extra: 25% more of the same work
    with pytest.raises(ValueError, match="PATTERN=FRACTION"):
        extra_work_for("x", "0.1")


COUNTED_PASS = """
import gc, sys
from pathlib import Path
from imgbench.measure.case import Workload
from imgbench.measure.instructions import count_pass

seen = []
workload = Workload(items=list(range(4)), fn=lambda item: seen.append(gc.isenabled()))
counts = count_pass(workload, Path(sys.argv[1]), "gc-check")
print(seen, gc.isenabled(), counts.instructions > 0)
"""


@pytest.mark.skipif(valgrind_missing() is not None, reason=str(valgrind_missing()))
def test_the_counted_pass_runs_without_the_garbage_collector(tmp_path: Path) -> None:
    """A collection inside a short pass would count as the case's work (pytest-codspeed's rule)."""
    from imgbench.measure.instructions import valgrind_command

    out = subprocess.run(
        [*valgrind_command(tmp_path), sys.executable, "-c", COUNTED_PASS, str(tmp_path)],
        env=dict(os.environ, CODSPEED_ENV="1"),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["[False,", "False,", "False,", "False]", "True", "True"]


def test_counted_processes_pin_glibc_copy_loops() -> None:
    """rep movsb is counted per byte and chosen by buffer distance: the counted server pins it off."""
    from imgbench.measure.instructions import counted_tunables

    assert counted_tunables(None) == (
        "glibc.cpu.x86_rep_movsb_threshold=4294967295:glibc.cpu.x86_rep_stosb_threshold=4294967295"
    )
    assert counted_tunables("glibc.malloc.arena_max=2").startswith("glibc.malloc.arena_max=2:")
