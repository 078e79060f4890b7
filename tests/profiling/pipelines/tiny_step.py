"""A user's own training step for ``imgbench profile --step``: a tiny classifier on the batch the
loader yields (images, labels), one SGD step per call, on the CPU (CUDA where the batch is)."""

from __future__ import annotations

from typing import Any

import torch

_model = torch.nn.Sequential(
    torch.nn.AdaptiveAvgPool2d(8), torch.nn.Flatten(), torch.nn.Linear(3 * 8 * 8, 2)
)
_optimiser = torch.optim.SGD(_model.parameters(), lr=0.01)
calls = 0  # how many times the profile called the step (checked in-process)


def train_step(batch: Any) -> torch.Tensor:
    global calls
    images, labels = batch
    loss = torch.nn.functional.cross_entropy(_model(images.float()), labels % 2)
    _optimiser.zero_grad(set_to_none=True)
    loss.backward()
    _optimiser.step()
    calls += 1
    return loss.detach()


not_a_step = 42
