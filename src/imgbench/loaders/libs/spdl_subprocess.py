"""The ``spdl-subprocess`` loader entry: SPDL's pipeline run with ``run_pipeline_in_subprocess``
(``imgbench.loaders.libs.spdl`` has the recipe; a registry entry's module provides ``build``)."""

from __future__ import annotations

from imgbench.loaders.libs.spdl import build_subprocess as build

__all__ = ["build"]
