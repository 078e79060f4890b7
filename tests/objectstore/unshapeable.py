"""pytest plugin: the shapes named in $IMGBENCH_TEST_UNSHAPEABLE cannot be set up (as where a
qdisc or a privilege is missing); the session's pid goes to $IMGBENCH_TEST_PID_FILE, for
``shaping.leftovers(pid)`` after it ended."""

from __future__ import annotations

import os

import pytest

from imgbench.objectstore import shaping

UNSHAPEABLE = set(filter(None, os.environ.get("IMGBENCH_TEST_UNSHAPEABLE", "").split(",")))
REASON = "the kernel has no tbf qdisc (forced by the test)"


def pytest_configure(config: pytest.Config) -> None:
    real = shaping.shaping_unavailable_reason

    def reason(shape: shaping.NetworkShape) -> str | None:
        return REASON if shape.name in UNSHAPEABLE else real(shape)

    shaping.shaping_unavailable_reason = reason  # type: ignore[assignment]
    if path := os.environ.get("IMGBENCH_TEST_PID_FILE"):
        with open(path, "w") as handle:
            handle.write(str(os.getpid()))
