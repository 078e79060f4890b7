"""``imgbench profile --step MODULE:FUNC``: the user's own step as the consumer of their loader,
on the CPU (no CUDA here: the step's wall time is its busy time)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from imgbench.profiling.step import UserStep, load_step
from imgbench.profiling.target import TargetError
from tests.profiling.conftest import PIPELINES, extra, read_rows, run_profile

STEP = f"{PIPELINES}.tiny_step:train_step"


def test_the_step_runs_once_per_call_and_reports_its_cached_rate() -> None:
    from tests.profiling.pipelines import tiny_step

    step = UserStep(STEP, load_step(STEP))
    batch = (torch.rand(4, 3, 32, 32), torch.tensor([0, 1, 0, 1]))
    before = tiny_step.calls
    assert step.cached_rate(batch, images=4) > 0
    assert tiny_step.calls - before == 6  # one untimed, five timed
    assert not step.cuda and "wall time" in step.method
    assert step.run(batch) > 0 and step.finish() == 0.0  # the CPU: nothing in flight
    assert step.kind == f"user step {STEP}"


@pytest.mark.parametrize(
    ("target", "message"),
    [
        (f"{PIPELINES}.tiny_step:not_a_step", "is not callable"),
        (f"{PIPELINES}.tiny_step:missing", "has no 'missing'"),
        (f"{PIPELINES}.does_not_import:step", "does not import"),
    ],
)
def test_a_step_that_cannot_be_loaded_is_one_line(target: str, message: str) -> None:
    with pytest.raises(TargetError, match=message):
        load_step(target)


def test_the_cli_reports_the_steps_rate_and_au_with_the_users_step(
    photos: Path, tmp_path: Path
) -> None:
    results = tmp_path / "results"
    done = run_profile(
        [
            f"{PIPELINES}.folder_pillow:make_dataset",
            *("--kw", f"root={photos}", "--workers", "0", "--batch-size", "8"),
            *("--step", STEP, "--seconds", "1", "--au-seconds", "1", "--sample-seconds", "0"),
            "--no-readers",
        ],
        results,
    )
    assert done.returncode == 0, done.stderr + done.stdout
    out = done.stdout
    assert "AU @ your step" in out
    assert f"your step {STEP} at 0 workers:" in out and "on a cached batch (CPU)" in out
    assert "such steps 90% busy" in out
    (row,) = [r for _, r in read_rows(results).iterrows()]
    x = extra(row)
    assert row["status"] == "ok"
    assert x["step"] == STEP and x["compute_kind"] == f"user step {STEP}"
    assert x["step_images_per_s_cached"] > 0 and x["step_cuda"] is False
    assert 0 < x["au"] <= 1.01 and x["au_batches"] >= 2
    assert x["gpus_kept_at_90"] > 0
    assert x["batch_parts"][0]["shape"] == [8, 3, 96, 96]
