"""The ways batches reach the device (the ``feed-*`` cases), and the constants they share."""

from __future__ import annotations

from dataclasses import dataclass

SIDE = 224  # the train recipe's output side
AU_TARGET = 0.9  # MLPerf Storage: a configuration passes at 90% accelerator utilisation


@dataclass(frozen=True)
class Feed:
    """How batches reach the device: the CPU pipeline (a name of ``NAMED_PIPELINES``, or
    ``bytes``: encoded files), the copy, and what the device does on arrival."""

    pipeline: str
    transfer: str
    gpu_decode: bool = False
    gpu_augment: bool = False


BYTES = "bytes"
FEEDS: dict[str, Feed] = {
    # the CPU does everything and ships float32
    "float32-pinned": Feed("default", "pinned-nonblocking"),
    "float32-pageable": Feed("default", "pageable-blocking"),
    # the CPU ships uint8 (a quarter of the bytes); the device normalises
    "uint8-pinned": Feed("uint8", "pinned-nonblocking"),
    "uint8-pageable": Feed("uint8", "pageable-blocking"),
    "uint8-prefetcher": Feed("uint8", "prefetcher"),
    # the CPU decodes; the device augments (per batch) and normalises
    "cpu-decode-gpu-augment": Feed("decode-only", "pageable-blocking", gpu_augment=True),
    # the CPU only reads; the device decodes (nvJPEG), augments and normalises
    "nvjpeg-gpu-augment": Feed(BYTES, "pageable-blocking", gpu_decode=True, gpu_augment=True),
}
