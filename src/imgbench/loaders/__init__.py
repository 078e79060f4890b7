"""The loader stage: loaders turn one sample pipeline into batches, measured end to end.

The machinery is here (``pipeline``, ``registry``, ``plan``, ``cases``, ``run``, ``checks``);
one file per loading system is in ``libs/``; the accelerator half (after a batch leaves
the CPU) is ``gpu/``."""
