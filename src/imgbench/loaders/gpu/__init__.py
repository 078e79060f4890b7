"""The accelerator half of the loader stage: what happens after a batch leaves the CPU.

Host-to-device copies, the side-stream prefetcher, GPU augmentation, batched nvJPEG decode and a
real training step as the consumer. Cases are planned everywhere and skip with "no CUDA device"
where CUDA is absent; the logic takes a ``device`` so it is tested on the CPU (docs/gpu.md).
"""
