"""The reader adapters: one file per decoding library (and tjbench, libjpeg-turbo's own
benchmark, the native ceiling). ``imgbench.readers.registry`` names each by
``"module:attr"``; the contract is ``imgbench.readers.base``."""
