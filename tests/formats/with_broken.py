"""pytest plugin: the format registry gains the byte-flipping format, so a bench session runs it."""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    import imgbench.formats.registry as registry
    from tests.formats.broken_format import SPEC

    registry.FORMATS = (*registry.FORMATS, SPEC)
