"""The modules `make test` runs alone (SERIAL) or hands out first (FIRST) exist: a renamed module
would silently share the CPU, or fall back to its collection order."""

from __future__ import annotations

from tests.conftest import FIRST, ROOT, SERIAL


def test_every_module_named_by_the_layout_exists() -> None:
    missing = [name for name in (*SERIAL, *FIRST) if not (ROOT / name).is_file()]
    assert missing == []
    assert not set(SERIAL) & set(FIRST)  # a serial module is never handed to a worker
