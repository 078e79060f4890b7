"""``imgbench profile --step MODULE:FUNC``: the user's own step as the consumer of their loader,
on the CPU (no CUDA here: the step's wall time is its busy time)."""

from __future__ import annotations

import pytest
import torch

from imgbench.profiling.step import UserStep, load_step
from imgbench.profiling.target import TargetError
from tests.profiling.conftest import PIPELINES

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


# The CLI with `--step` (the step's rate and AU in the output and the row) is checked on
# test_cli.py::test_opencv_albumentations_example_with_a_python_list_index's profile.
