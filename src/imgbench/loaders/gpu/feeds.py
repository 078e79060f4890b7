"""The ways batches reach the device (the ``feed-*`` cases), and the constants they share."""

from __future__ import annotations

from dataclasses import dataclass

SIDE = 224  # the train recipe's output side
AU_TARGET = 0.9  # MLPerf Storage: a configuration passes at 90% accelerator utilisation


DATALOADER = "dataloader"  # torch's DataLoader, one worker process per core
TORCHDATA_NODES = "torchdata-nodes"  # ParallelMapper (processes) > ... > PinMemory > Prefetcher


@dataclass(frozen=True)
class Feed:
    """How batches reach the device: the CPU pipeline (a name of ``NAMED_PIPELINES``, or
    ``bytes``: encoded files) in ``loader``, the copy, and what the device does on arrival
    (``gpu_decoder``: a kind of ``imgbench.loaders.gpu.ops.GpuDecoder``). ``requires``: the modules
    the feed imports beyond torch and torchvision (its rows skip without them)."""

    pipeline: str
    transfer: str
    gpu_decode: bool = False
    gpu_augment: bool = False
    loader: str = DATALOADER
    gpu_decoder: str = "nvjpeg"
    requires: tuple[str, ...] = ()


BYTES = "bytes"
FEEDS: dict[str, Feed] = {
    # the CPU does everything and ships float32
    "float32-pinned": Feed("default", "pinned-nonblocking"),
    "float32-pageable": Feed("default", "pageable-blocking"),
    # the CPU ships uint8 (a quarter of the bytes); the device normalises
    "uint8-pinned": Feed("uint8", "pinned-nonblocking"),
    "uint8-pageable": Feed("uint8", "pageable-blocking"),
    "uint8-prefetcher": Feed("uint8", "prefetcher"),
    # the same uint8 pipeline through torchdata.nodes, pinned by its PinMemory node (where CUDA
    # is) and queued by its Prefetcher; copied non-blocking, normalised on the device
    "uint8-torchdata-nodes": Feed(
        "uint8", "pinned-nonblocking", loader=TORCHDATA_NODES, requires=("torchdata.nodes",)
    ),
    # the CPU decodes; the device augments (per batch) and normalises
    "cpu-decode-gpu-augment": Feed("decode-only", "pageable-blocking", gpu_augment=True),
    # the CPU only reads; the device decodes (nvJPEG), augments and normalises
    "nvjpeg-gpu-augment": Feed(BYTES, "pageable-blocking", gpu_decode=True, gpu_augment=True),
    # the same with nvImageCodec's decoder on the device
    "nvimgcodec-gpu-augment": Feed(
        BYTES,
        "pageable-blocking",
        gpu_decode=True,
        gpu_augment=True,
        gpu_decoder="nvimgcodec",
        requires=("nvidia.nvimgcodec",),
    ),
}
GPU_DECODE_FEEDS = tuple(name for name, feed in FEEDS.items() if feed.gpu_decode)
