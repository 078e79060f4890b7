"""A real training step as the consumer: a torchvision classifier with random weights (nothing is
downloaded), channels-last, bf16 autocast, SGD with momentum. Autocast is on for CUDA only: on
the CPU (the tests) bf16 convolutions fall back to slow kernels on most CPUs, so it runs float32.

:class:`StepCompute` plugs it into :class:`imgbench.loaders.run.LoaderRun` where the emulated
step (``imgbench.loaders.au.ComputeStep``) goes: after each batch it launches the step on the
batch the feed just delivered. On CUDA it brackets every step with two events and, keeping one
step in flight (as a training loop does until something reads the loss), waits for the previous
one and returns its busy time: AU is then the GPU's busy share of the wall time over the timed
rounds. On the CPU a step is synchronous and its wall time is its busy time.
"""

from __future__ import annotations

import time
from typing import Any

MODEL_KIND = "bf16-autocast-channels-last-sgd"


class TrainStep:
    """One optimisation step of ``model`` on a batch: forward under bf16 autocast, cross-entropy,
    backward, SGD. ``check`` says what is wrong with a batch or the model's output, or None."""

    def __init__(self, model: str, device: Any, num_classes: int = 1000) -> None:
        import torch
        import torchvision

        self.name = model
        self.device = torch.device(device)
        self.num_classes = num_classes
        build = getattr(torchvision.models, model)
        net = build(weights=None, num_classes=num_classes)
        self.model = net.to(self.device, memory_format=torch.channels_last).train()
        self.autocast = self.device.type == "cuda"
        self.optimiser = torch.optim.SGD(self.model.parameters(), lr=0.01, momentum=0.9)
        self.loss_fn = torch.nn.CrossEntropyLoss()

    def __call__(self, images: Any, labels: Any) -> Any:
        """Run the step; returns the loss (a device tensor: reading it would wait for the GPU)."""
        import torch

        images = images.contiguous(memory_format=torch.channels_last)
        with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.autocast):
            logits = self.model(images)
            loss = self.loss_fn(logits, labels % self.num_classes)
        self.optimiser.zero_grad(set_to_none=True)
        loss.backward()
        self.optimiser.step()
        return loss

    def check(self, images: Any, labels: Any) -> str | None:
        """The batch and the model's output shapes (untimed, before any timing)."""
        import torch

        if images.ndim != 4 or images.shape[1] != 3:
            return f"images have shape {tuple(images.shape)}, expected N x 3 x H x W"
        if images.dtype != torch.float32:
            return f"images are {images.dtype}, expected float32 (normalised)"
        if labels.shape != (images.shape[0],):
            return f"labels have shape {tuple(labels.shape)}, expected ({images.shape[0]},)"
        with (
            torch.no_grad(),
            torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.autocast),
        ):
            out = self.model.eval()(images[:2].contiguous(memory_format=torch.channels_last))
        self.model.train()
        if tuple(out.shape) != (min(2, images.shape[0]), self.num_classes):
            return f"{self.name} gave {tuple(out.shape)}, expected (2, {self.num_classes})"
        return None


def step_and_batch(params: dict[str, Any], side: int) -> tuple[TrainStep, Any, Any]:
    """A case's step (``params``: model, device, batch_size, side) and one random batch on its
    device: what the cached-step rows time and what the feed rows' own step rate is measured on."""
    import torch

    step = TrainStep(params["model"], params["device"])
    batch = int(params["batch_size"])
    side = int(params.get("side", side))
    images = torch.randn(batch, 3, side, side, device=step.device)
    labels = torch.randint(0, 1000, (batch,), device=step.device)
    return step, images, labels


def cached_rate(
    step: TrainStep, images: Any, labels: Any, steps: int, warmup: int | None = None
) -> float:
    """The step's own images/s on one batch kept on the device: no loader, no copy. Warm-up:
    3 steps (cuDNN picks its kernels), fewer when fewer are timed."""
    warmup = min(3, steps) if warmup is None else warmup
    from imgbench.loaders.gpu.device import synchronize

    for _ in range(warmup):
        step(images, labels)
    synchronize(step.device)
    start = time.perf_counter()
    for _ in range(steps):
        step(images, labels)
    synchronize(step.device)
    return steps * int(images.shape[0]) / (time.perf_counter() - start)


class StepCompute:
    """The training step as LoaderRun's compute: ``run()`` steps on ``feed.last`` and returns
    busy seconds (on CUDA: the previous step's, from its events, one step kept in flight).
    ``seconds`` is the step's time on a cached batch, ``kind`` names the model."""

    def __init__(self, step: TrainStep, feed: Any, cached_s_per_batch: float) -> None:
        self.step = step
        self.feed = feed
        self.seconds = cached_s_per_batch
        self.kind = f"{step.name}-{MODEL_KIND}"
        self.cuda = step.device.type == "cuda"
        self._pending: tuple[Any, Any] | None = None

    def run(self) -> float:
        batch = self.feed.last
        if batch is None:
            raise RuntimeError("the training step ran before the feed delivered a batch")
        if not self.cuda:
            start = time.perf_counter()
            self.step(batch[0], batch[1])
            return time.perf_counter() - start
        import torch

        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        begin.record()
        self.step(batch[0], batch[1])
        end.record()
        busy = 0.0
        if self._pending is not None:
            previous_begin, previous_end = self._pending
            previous_end.synchronize()
            busy = previous_begin.elapsed_time(previous_end) / 1e3
        self._pending = (begin, end)
        return busy
