"""Where CUDA is, and the few calls that differ between a CUDA device and the CPU."""

from __future__ import annotations

from typing import Any

NO_CUDA = "no CUDA device"


def cuda_missing(device: str = "cuda") -> str | None:
    """Why the cases cannot run on ``device`` ("no CUDA device"), or None. ``device="cpu"`` (the
    tests' setting) always runs. Asking CUDA for its devices here is safe: the case itself runs
    in a fork of the worker server, a separate process that never initialised CUDA."""
    if not device.startswith("cuda"):
        return None
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    if not torch.cuda.is_available():
        return NO_CUDA
    return None


def synchronize(device: Any) -> None:
    """Wait for the device's queued work (nothing to wait for on the CPU)."""
    import torch

    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)


def device_name(device: Any) -> str:
    """The device as a row records it: the GPU's name, or "cpu"."""
    import torch

    dev = torch.device(device)
    if dev.type == "cuda":
        return str(torch.cuda.get_device_name(dev))
    return dev.type


def synchronize_stream(device: Any) -> None:
    """Wait for the current stream's queued work only (a side stream's copy ahead keeps going)."""
    import torch

    if torch.device(device).type == "cuda":
        torch.cuda.current_stream(device).synchronize()
