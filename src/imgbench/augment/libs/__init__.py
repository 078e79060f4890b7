"""The augmentation adapters: one file per library, each building the transforms and
pipelines of ``imgbench.augment.spec`` with that library's calls. ``imgbench.augment.registry``
names each by module; the contract is ``imgbench.augment.base``."""
