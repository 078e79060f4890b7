"""The loaders: one file per loading system (its ``build(pipeline, params)``), each running
the same sample pipeline (``imgbench.loaders.pipeline``). ``imgbench.loaders.registry``
names each by module; the contract is ``imgbench.loaders.base``."""
