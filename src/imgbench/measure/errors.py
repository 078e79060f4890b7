"""How stage code says a case cannot run here, or broke: imgbench's own exceptions.

Stage code raises these, never ``pytest.skip``/``pytest.fail``: the engine runs without pytest
(``imgbench profile``, scripts, a forked worker), and the pytest plugin maps them to its own
outcomes in one place.
"""

from __future__ import annotations


class Skip(Exception):  # noqa: N818  (an outcome, like pytest's Skipped, not an error)
    """The case cannot run here (a missing codec, library or service): a skipped row."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class CaseFailed(Exception):  # noqa: N818  (named as the outcome it is, like Skip)
    """The case ran and broke its contract (a verification failed): a failed row."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
